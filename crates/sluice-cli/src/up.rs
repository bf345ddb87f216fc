//! `sluice up`: a whole cluster on this machine, in the foreground.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use clap::Args;
use sluice_ctld::config::ClusterConfig;

/// Options of `sluice up`.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// A slurm.conf describing the cluster (default: this machine as one node).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where the database, sockets and logs live (default: $SLUICE_STATE_DIR, or
    /// ~/.local/state/sluice).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Also serve the controller on this TCP address (`host:port`), for commands on
    /// other hosts: only requests signed with the cluster key (`cluster.key` in the
    /// state directory) are accepted; see the README.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Start the controller only; agents are started separately (`sluice agent`).
    #[arg(long, hide = true)]
    pub controller_only: bool,
}

/// Options of `sluice agent` (started by `sluice up`).
#[derive(Args, Debug)]
pub struct AgentArgs {
    /// The node this agent serves.
    #[arg(long)]
    pub node: String,
    /// The cluster's state directory.
    #[arg(long, value_name = "DIR")]
    pub state_dir: PathBuf,
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// Runs `sluice up`; returns the exit status.
pub fn run(args: UpArgs) -> i32 {
    let state_dir = absolute(
        &args
            .state_dir
            .clone()
            .or_else(|| std::env::var_os(sluice_proto::paths::STATE_DIR_ENV).map(PathBuf::from))
            .unwrap_or_else(sluice_proto::paths::default_state_dir),
    );
    let (conf, warnings) = match &args.config {
        Some(path) => match ClusterConfig::read(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("sluice up: error: {e}");
                return 1;
            }
        },
        None => (ClusterConfig::this_machine(), Vec::new()),
    };
    for w in warnings {
        eprintln!("sluice up: warning: {w}");
    }
    let socket = sluice_proto::paths::controller_socket(&state_dir);
    if sluice_proto::Client::new(&socket)
        .get::<serde_json::Value>("/v1/ping")
        .is_ok()
    {
        eprintln!(
            "sluice up: error: a controller is already running in {}",
            state_dir.display()
        );
        return 1;
    }
    for dir in [
        state_dir.clone(),
        state_dir.join("logs"),
        state_dir.join("bin"),
    ] {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("sluice up: error: {}: {e}", dir.display());
            return 1;
        }
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sluice"));
    // The Slurm commands, and `sluice` itself (for `sluice up`, `sluice sim` from the
    // same shell).
    for name in crate::slurm::COMMANDS.iter().chain(&["sluice"]) {
        // Replaced atomically (a new link renamed over the old), so that commands
        // running while the cluster restarts always find it.
        let link = state_dir.join("bin").join(name);
        let fresh = state_dir.join("bin").join(format!(".{name}.new"));
        let _ = std::fs::remove_file(&fresh);
        let made =
            std::os::unix::fs::symlink(&exe, &fresh).and_then(|_| std::fs::rename(&fresh, &link));
        if let Err(e) = made {
            eprintln!("sluice up: warning: cannot link {}: {e}", link.display());
        }
    }
    let mut agents: Vec<Child> = Vec::new();
    for node in conf.cluster.nodes.iter().filter(|_| !args.controller_only) {
        let log = state_dir
            .join("logs")
            .join(format!("agent-{}.log", node.name));
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map(Stdio::from)
            .unwrap_or(Stdio::null());
        match Command::new(&exe)
            .args(["agent", "--node", &node.name, "--state-dir"])
            .arg(&state_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out)
            .spawn()
        {
            Ok(c) => agents.push(c),
            Err(e) => {
                eprintln!(
                    "sluice up: error: cannot start the agent for {}: {e}",
                    node.name
                );
                return 1;
            }
        }
    }
    let nodes: Vec<&str> = conf.cluster.nodes.iter().map(|n| n.name.as_str()).collect();
    eprintln!(
        "sluice: cluster '{}' is up: {} node(s) {}, partition(s) {}",
        conf.cluster_name,
        nodes.len(),
        sluice_conf::hostlist::compress(&nodes),
        conf.cluster
            .partitions
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    eprintln!(
        "sluice: state in {}; to use it from another shell:",
        state_dir.display()
    );
    eprintln!(
        "    export SLUICE_STATE_DIR={} PATH={}:$PATH",
        state_dir.display(),
        state_dir.join("bin").display()
    );
    eprintln!("sluice: press Ctrl-C to stop");
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let result = runtime.block_on(async {
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("signal handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        sluice_ctld::server::run(conf, &state_dir, args.listen, shutdown).await
    });
    for a in &mut agents {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(a.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    for mut a in agents {
        let _ = a.wait();
    }
    match result {
        Ok(()) => {
            eprintln!("sluice: stopped");
            0
        }
        Err(e) => {
            eprintln!("sluice up: error: {e}");
            1
        }
    }
}

/// Runs `sluice agent`.
pub fn agent(args: AgentArgs) -> i32 {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let r = runtime.block_on(async {
        let shutdown = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("signal handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        sluice_noded::run(&args.state_dir, &args.node, shutdown).await
    });
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sluice agent: error: {e}");
            1
        }
    }
}
