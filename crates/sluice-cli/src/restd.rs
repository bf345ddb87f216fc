//! `slurmrestd [-a rest_auth/local|rest_auth/jwt] [-f slurm.conf] LISTEN...`: Slurm's
//! REST daemon, for clients that start or expect one. The controller serves the REST
//! API itself (`/slurm/v0.0.44/...`); this passes connections through to it, unchanged:
//!
//! - `unix:/path` (`rest_auth/local`): only the user slurmrestd runs as may connect (the
//!   peer's uid, from the kernel); connections go to the controller's Unix socket on this
//!   host, where that same uid is the caller.
//! - `[host]:port` (`rest_auth/jwt`): connections go to the controller's TCP port
//!   (`SlurmctldHost:SlurmctldPort`, or `SLUICE_CONTROLLER`), which admits requests by
//!   their token (`X-SLURM-USER-TOKEN`) and refuses the others.
//!
//! Nothing is parsed or rewritten on the way: who the caller is is decided by the
//! controller, from the kernel or the token, never here.

use std::path::PathBuf;

use tokio::io::AsyncWriteExt;

const ME: &str = "slurmrestd";

/// Where the daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Listen {
    /// `unix:/path`.
    Unix(PathBuf),
    /// `host:port` (`:port` for every address).
    Tcp(String),
}

/// The command line.
#[derive(Debug, PartialEq, Eq)]
struct Flags {
    listen: Vec<Listen>,
}

fn usage() -> &'static str {
    "Usage: slurmrestd [-a rest_auth/local|rest_auth/jwt] [-f slurm.conf] [-h] [-V] \
     <[host]:port | unix:/path/to/socket>..."
}

/// Reads the command line; Err is the message and exit status (0 for `-h`, `-V`).
fn parse(args: &[String]) -> Result<Flags, (String, i32)> {
    let mut listen = Vec::new();
    // `-a`: the authentication plugins allowed (`None`: both).
    let mut auth: Option<Vec<String>> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let mut value = |flag: &str| -> Result<String, (String, i32)> {
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| (format!("{ME}: option requires an argument -- '{flag}'"), 1))
        };
        match a.as_str() {
            "-h" | "--help" => return Err((usage().to_string(), 0)),
            "-V" | "--version" => return Err((crate::slurm::common::VERSION.to_string(), 0)),
            "-a" => {
                let list: Vec<String> = value("a")?
                    .split(',')
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .collect();
                if let Some(bad) = list
                    .iter()
                    .find(|p| !matches!(p.as_str(), "rest_auth/local" | "rest_auth/jwt"))
                {
                    return Err((
                        format!("{ME}: error: Unable to load authentication plugin: {bad}"),
                        1,
                    ));
                }
                auth = Some(list);
            }
            "-f" => std::env::set_var("SLURM_CONF", value("f")?),
            // Accepted, no effect here (threads, debug level, data parsers, user, group).
            "-t" | "-d" | "-s" | "-u" | "-g" => {
                value(&a[1..])?;
            }
            "-v" => {}
            f if f.starts_with('-') => {
                return Err((
                    format!("{ME}: invalid option -- '{}'\n{}", &f[1..], usage()),
                    1,
                ))
            }
            spec => match spec.strip_prefix("unix:") {
                Some(path) if path.starts_with('/') => listen.push(Listen::Unix(path.into())),
                Some(_) => {
                    return Err((
                        format!("{ME}: error: Unix socket path must be absolute: {spec}"),
                        1,
                    ))
                }
                None if spec
                    .rsplit_once(':')
                    .is_some_and(|(_, p)| p.parse::<u16>().is_ok()) =>
                {
                    let spec = if spec.starts_with(':') {
                        format!("0.0.0.0{spec}")
                    } else {
                        spec.to_string()
                    };
                    listen.push(Listen::Tcp(spec));
                }
                None => return Err((format!("{ME}: error: Unable to parse {spec}"), 1)),
            },
        }
        i += 1;
    }
    if listen.is_empty() {
        return Err((
            format!("{ME}: error: no listening sockets given\n{}", usage()),
            1,
        ));
    }
    for l in &listen {
        let (needed, what) = match l {
            Listen::Unix(_) => ("rest_auth/local", "a unix: socket"),
            Listen::Tcp(_) => ("rest_auth/jwt", "a host:port socket"),
        };
        if auth
            .as_ref()
            .is_some_and(|a| !a.iter().any(|p| p == needed))
        {
            return Err((format!("{ME}: error: {what} needs {needed}"), 1));
        }
    }
    Ok(Flags { listen })
}

/// The controller's Unix socket on this host, if it runs here.
fn local_controller() -> Option<PathBuf> {
    let socket = sluice_proto::paths::controller_socket(&sluice_proto::paths::state_dir());
    if socket.exists() {
        return Some(socket);
    }
    let conf = sluice_conf::slurm_conf::read(&crate::daemons::slurm_conf_path(None)).ok()?;
    let net = sluice_conf::net_conf::NetConf::from_conf(&conf).ok()?;
    let here = sluice_proto::paths::controller_socket(&net.state_save_location);
    here.exists().then_some(here)
}

/// The controller's TCP address: `SLUICE_CONTROLLER`, else slurm.conf's.
fn tcp_controller() -> Option<String> {
    if let Some(a) = std::env::var(crate::slurm::common::CONTROLLER_ENV)
        .ok()
        .filter(|a| !a.is_empty())
    {
        return Some(a);
    }
    let conf = sluice_conf::slurm_conf::read(&crate::daemons::slurm_conf_path(None)).ok()?;
    sluice_conf::net_conf::NetConf::from_conf(&conf)
        .ok()?
        .controller_addr()
}

/// Refuses a connection of another user with a 401, as rest_auth/local does. The
/// request's head is read first (up to 64 KiB or 5 s), so that a client still sending it
/// gets the answer rather than a broken pipe.
async fn refuse(mut s: tokio::net::UnixStream) {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let read_head = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), read_head).await;
    let body = "Authentication failure";
    let _ = s
        .write_all(
            format!(
                "HTTP/1.1 401 UNAUTHORIZED\r\nConnection: Close\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await;
    let _ = s.shutdown().await;
}

/// Runs `slurmrestd ARGS`; the exit status.
pub fn main(args: Vec<String>) -> i32 {
    let flags = match parse(&args) {
        Ok(f) => f,
        Err((m, code)) => {
            if code == 0 {
                println!("{m}");
            } else {
                eprintln!("{m}");
            }
            return code;
        }
    };
    let unix_upstream = if flags.listen.iter().any(|l| matches!(l, Listen::Unix(_))) {
        match local_controller() {
            Some(s) => Some(s),
            None => {
                eprintln!("{ME}: error: rest_auth/local needs the controller on this host (no controller socket found)");
                return 1;
            }
        }
    } else {
        None
    };
    let tcp_upstream = if flags.listen.iter().any(|l| matches!(l, Listen::Tcp(_))) {
        match tcp_controller() {
            Some(a) => Some(a),
            None => {
                eprintln!("{ME}: error: rest_auth/jwt needs the controller's TCP address (SlurmctldHost in slurm.conf, or SLUICE_CONTROLLER)");
                return 1;
            }
        }
    } else {
        None
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async move {
        let me = nix::unistd::geteuid().as_raw();
        let mut tasks = Vec::new();
        for l in flags.listen {
            match l {
                Listen::Unix(path) => {
                    let _ = std::fs::remove_file(&path);
                    let listener = match tokio::net::UnixListener::bind(&path) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("{ME}: error: unable to bind {}: {e}", path.display());
                            return 1;
                        }
                    };
                    let upstream = unix_upstream.clone().expect("found above");
                    tasks.push(tokio::spawn(async move {
                        while let Ok((mut s, _)) = listener.accept().await {
                            let peer = s.peer_cred().map(|c| c.uid()).ok();
                            if peer != Some(me) {
                                tokio::spawn(refuse(s));
                                continue;
                            }
                            let upstream = upstream.clone();
                            tokio::spawn(async move {
                                if let Ok(mut u) = tokio::net::UnixStream::connect(&upstream).await
                                {
                                    let _ = tokio::io::copy_bidirectional(&mut s, &mut u).await;
                                }
                            });
                        }
                    }));
                }
                Listen::Tcp(addr) => {
                    let listener = match tokio::net::TcpListener::bind(&addr).await {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("{ME}: error: unable to bind {addr}: {e}");
                            return 1;
                        }
                    };
                    let upstream = tcp_upstream.clone().expect("found above");
                    tasks.push(tokio::spawn(async move {
                        while let Ok((mut s, _)) = listener.accept().await {
                            let upstream = upstream.clone();
                            tokio::spawn(async move {
                                if let Ok(mut u) = tokio::net::TcpStream::connect(&upstream).await {
                                    let _ = tokio::io::copy_bidirectional(&mut s, &mut u).await;
                                }
                            });
                        }
                    }));
                }
            }
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("signal handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        for t in tasks {
            t.abort();
        }
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn listening_sockets_and_their_authentication() {
        let f = parse(&words(&["-a", "rest_auth/jwt", ":6820"])).unwrap();
        assert_eq!(f.listen, [Listen::Tcp("0.0.0.0:6820".into())]);
        let f = parse(&words(&["unix:/run/rest.sock", "localhost:6820"])).unwrap();
        assert_eq!(
            f.listen,
            [
                Listen::Unix("/run/rest.sock".into()),
                Listen::Tcp("localhost:6820".into())
            ]
        );
        assert_eq!(
            parse(&words(&["-a", "rest_auth/jwt", "unix:/run/rest.sock"]))
                .unwrap_err()
                .0,
            "slurmrestd: error: a unix: socket needs rest_auth/local"
        );
        assert_eq!(
            parse(&words(&["-a", "rest_auth/none", ":1"]))
                .unwrap_err()
                .0,
            "slurmrestd: error: Unable to load authentication plugin: rest_auth/none"
        );
        assert_eq!(parse(&words(&["nowhere"])).unwrap_err().1, 1);
        assert_eq!(parse(&words(&[])).unwrap_err().1, 1);
        assert_eq!(parse(&words(&["-h"])).unwrap_err().1, 0);
    }
}
