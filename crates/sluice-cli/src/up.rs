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
    /// Log more: each -v raises the controller's and the agents' log level one step
    /// above slurm.conf's `SlurmctldDebug` and `SlurmdDebug` (default info; -v verbose,
    /// -vv debug, -vvv debug2, ...).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Where the controller logs: `SlurmctldLogFile`, else `logs/slurmctld.log` in the
/// state directory.
fn controller_log(conf: &ClusterConfig, state_dir: &Path) -> PathBuf {
    conf.logging
        .slurmctld_log_file
        .as_deref()
        .map(|f| absolute(Path::new(f)))
        .unwrap_or_else(|| state_dir.join("logs").join("slurmctld.log"))
}

/// The binary the Slurm commands' names link to: `sluice-commands` where it is installed
/// next to `sluice` (`exe`), trusted and of the same build (`build`;
/// [`sluice_noded::companion::beside`]), the same commands in a binary a fraction of
/// the size, which starts in about half the time; `sluice` itself where it is not
/// (with a warning saying why, where one is installed but not used).
pub fn commands_binary(exe: &Path, build: &str) -> PathBuf {
    match sluice_noded::companion::beside(exe, "sluice-commands", build) {
        Ok(Some(_)) => exe.with_file_name("sluice-commands"),
        Ok(None) => exe.to_path_buf(),
        Err(why) => {
            eprintln!(
                "sluice up: warning: {why}: the commands run as {}",
                exe.display()
            );
            exe.to_path_buf()
        }
    }
}

/// Where node `node`'s agent logs: `SlurmdLogFile` with `%h` and `%n` expanded, else
/// `logs/slurmd-NODE.log` in the state directory.
fn agent_log(conf: &ClusterConfig, state_dir: &Path, node: &str) -> PathBuf {
    conf.logging
        .slurmd_log_file_for(&sluice_ctld::config::this_host(), node)
        .map(|f| absolute(Path::new(&f)))
        .unwrap_or_else(|| default_agent_log(state_dir, node))
}

/// Where the agents of `nodes` log, as the start-up banner says it: one node's file;
/// for several, the file name with `%n` and the nodes' host list (`.../slurmd-%n.log
/// (%n: n[1-4])`), or the one file they share when `SlurmdLogFile` names no node.
fn agent_logs(conf: &ClusterConfig, state_dir: &Path, nodes: &[&str]) -> String {
    if let [node] = nodes {
        return format!("agent's log {}", agent_log(conf, state_dir, node).display());
    }
    let template = agent_log(conf, state_dir, "%n").display().to_string();
    if template.contains("%n") {
        format!(
            "agents' logs {template} (%n: {})",
            sluice_conf::hostlist::compress(nodes)
        )
    } else {
        format!("agents' log {template}")
    }
}

pub(crate) fn default_agent_log(state_dir: &Path, node: &str) -> PathBuf {
    state_dir.join("logs").join(format!("slurmd-{node}.log"))
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
    // A JWT key the controller would refuse stops the cluster before anything starts
    // (not after it has said it is up).
    if let Some(jwt) = conf.net.jwt.as_deref() {
        if let Err(e) = sluice_ctld::token::Tokens::load(&jwt.key) {
            eprintln!("sluice up: error: {e}");
            return 1;
        }
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
    let commands = commands_binary(&exe, crate::BUILD_ID);
    // The Slurm commands, `slurmrestd`, and `sluice` itself (for `sluice up`, `sluice
    // sim` from the same shell).
    for name in crate::slurm::COMMANDS
        .iter()
        .chain(&["slurmrestd", "sluice"])
    {
        let exe = match crate::slurm::COMMANDS.contains(name) {
            true => &commands,
            false => &exe,
        };
        // Replaced atomically (a new link renamed over the old), so that commands
        // running while the cluster restarts always find it.
        let link = state_dir.join("bin").join(name);
        let fresh = state_dir.join("bin").join(format!(".{name}.new"));
        let _ = std::fs::remove_file(&fresh);
        let made =
            std::os::unix::fs::symlink(exe, &fresh).and_then(|_| std::fs::rename(&fresh, &link));
        if let Err(e) = made {
            eprintln!("sluice up: warning: cannot link {}: {e}", link.display());
        }
    }
    let ctld_log = controller_log(&conf, &state_dir);
    let ctld_level = conf.logging.slurmctld_debug.raised(args.verbose);
    if let Err(e) = crate::daemon_log::install(&ctld_log, ctld_level) {
        eprintln!("sluice up: error: cannot log to SlurmctldLogFile {e}");
        return 1;
    }
    tracing::info!(
        "slurmctld version {} started on cluster {}",
        env!("CARGO_PKG_VERSION"),
        conf.cluster_name
    );
    let agent_level = conf.logging.slurmd_debug.raised(args.verbose);
    let mut agents: Vec<Child> = Vec::new();
    for node in conf.cluster.nodes.iter().filter(|_| !args.controller_only) {
        // The agent logs there, and what it says on stderr (a panic) lands there too.
        let log = agent_log(&conf, &state_dir, &node.name);
        let out = match crate::daemon_log::open(&log) {
            Ok(f) => Stdio::from(f),
            Err(e) => {
                eprintln!(
                    "sluice up: error: cannot log to SlurmdLogFile {}: {}",
                    log.display(),
                    sluice_proto::oserror::describe(&e)
                );
                stop_agents(agents);
                return 1;
            }
        };
        match Command::new(&exe)
            .args(["agent", "--node", &node.name, "--state-dir"])
            .arg(&state_dir)
            .arg("--log-file")
            .arg(&log)
            .args(["--debug", agent_level.name()])
            .args(gather_flags(&conf))
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
                stop_agents(agents);
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
    let agent_line = if args.controller_only {
        String::new()
    } else {
        format!(
            ", {} ({agent_level})",
            agent_logs(&conf, &state_dir, &nodes)
        )
    };
    eprintln!(
        "sluice: controller log {} ({ctld_level}){agent_line}",
        ctld_log.display(),
    );
    if let Some(addr) = args.listen {
        if conf.net.jwt.is_some() {
            eprintln!(
                "sluice: listening on {addr}; REST API http://{addr}/slurm/v0.0.44/, dashboard http://{addr}/ui (log in with the line `scontrol token` prints)"
            );
        } else {
            eprintln!("sluice: listening on {addr} (requests signed with the cluster key)");
        }
    }
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
            tracing::info!("Terminate signal (SIGINT or SIGTERM) received");
        };
        let net = sluice_ctld::server::Network {
            listen: args.listen,
            auth: None,
            // One host, one slurm.conf: nothing to compare.
            conf_hash: None,
            pages: args.listen.map(crate::ui::controller_pages),
            conf_path: args.config.clone(),
            agents_stop_with_it: !args.controller_only,
            epoch: None,
        };
        sluice_ctld::server::run(conf, &state_dir, net, shutdown).await
    });
    // Stopped and flushed: a forecast still computing is not waited for.
    runtime.shutdown_timeout(sluice_ctld::server::BLOCKING_GRACE);
    stop_agents(agents);
    match result {
        Ok(()) => {
            tracing::info!("slurmctld stopped");
            eprintln!("sluice: stopped");
            0
        }
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("sluice up: error: {e}");
            1
        }
    }
}

/// slurm.conf's gathering settings, as written, for `sluice up`'s agents (checked when
/// the file was read).
fn gather_flags(conf: &ClusterConfig) -> Vec<String> {
    let g = &conf.gather;
    let mut flags = vec![
        "--acct-gather-frequency".to_string(),
        format!("task={}", g.task_secs()),
    ];
    if g.kind != sluice_conf::acct_gather_conf::GatherType::Auto {
        flags.extend(["--acct-gather-type".to_string(), g.kind.name().to_string()]);
    }
    flags
}

/// Stops the agents `sluice up` started and waits for them: SIGINT, so that they end
/// their jobs (SIGTERM would leave them running, for a restarted agent to adopt).
fn stop_agents(agents: Vec<Child>) {
    for a in &agents {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(a.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
    }
    for mut a in agents {
        let _ = a.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(text: &str) -> ClusterConfig {
        let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
        ClusterConfig::from_slurm_conf(&parsed, &[])
    }

    #[test]
    fn the_commands_link_to_sluice_commands_of_the_same_build_and_else_to_sluice() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sluice-links-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("sluice");
        std::fs::write(&exe, b"").unwrap();
        assert_eq!(commands_binary(&exe, "0.1.0-a"), exe, "none installed");
        // A stand-in that answers `--build-id` as a build "0.1.0-a" would.
        let lean = dir.join("sluice-commands");
        std::fs::write(
            &lean,
            "#!/bin/sh\n[ \"$1\" = --build-id ] && echo 0.1.0-a\n",
        )
        .unwrap();
        std::fs::set_permissions(&lean, std::fs::Permissions::from_mode(0o755)).unwrap();
        // (Tried again a few times: a fork by another test's thread while the file was
        // open for writing makes it busy to execute, ETXTBSY, for a moment.)
        let mut found = commands_binary(&exe, "0.1.0-a");
        for _ in 0..50 {
            if found == lean {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            found = commands_binary(&exe, "0.1.0-a");
        }
        assert_eq!(found, lean);
        assert_eq!(
            commands_binary(&exe, "0.1.0-b"),
            exe,
            "another build: stale"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_banner_names_the_agents_real_log_files() {
        // What `sluice up` prints: the real files, not a placeholder.
        let four = "NodeName=n[1-4] CPUs=2\nPartitionName=p Nodes=ALL Default=YES\n";
        let state = Path::new("/srv/sluice");
        let nodes = ["n1", "n2", "n3", "n4"];
        assert_eq!(
            agent_logs(&conf(four), state, &nodes),
            "agents' logs /srv/sluice/logs/slurmd-%n.log (%n: n[1-4])"
        );
        assert_eq!(
            agent_logs(&conf(four), state, &["n2"]),
            "agent's log /srv/sluice/logs/slurmd-n2.log"
        );
        let configured = format!("SlurmdLogFile=/var/log/slurm/%n.log\n{four}");
        assert_eq!(
            agent_logs(&conf(&configured), state, &nodes),
            "agents' logs /var/log/slurm/%n.log (%n: n[1-4])"
        );
        // A file without %n: every agent writes to it.
        let shared = format!("SlurmdLogFile=/var/log/slurmd.log\n{four}");
        assert_eq!(
            agent_logs(&conf(&shared), state, &nodes),
            "agents' log /var/log/slurmd.log"
        );
    }
}
