//! The daemons as operators know them: `slurmctld` (also `sluice ctld`) runs the
//! controller of a cluster of several machines, `slurmd` (also `sluice agent`) one
//! node's agent on its host, both with Slurm's daemon flags:
//!
//! - `-D`: stay in the foreground; without it the daemon detaches as Slurm's do (fork,
//!   new session, `/` as working directory, standard streams on `/dev/null`) once its
//!   configuration is read, its key checked and its log open, so that those errors
//!   still reach the terminal.
//! - `-f FILE`: slurm.conf; else `$SLURM_CONF`; else [`DEFAULT_SLURM_CONF`].
//! - `-N NAME` (`slurmd`): the node it serves; else this host's short name. Several
//!   agents may run on one host under distinct names (Slurm's multiple-slurmd), each with
//!   its own `Port=` on its node line.
//! - `-v` (repeatable): log more than `SlurmctldDebug`/`SlurmdDebug` say.
//! - `-L FILE`: log there; else `SlurmctldLogFile`/`SlurmdLogFile` (`%h`, `%n`); else
//!   standard error in the foreground, and in the background (Slurm's would use
//!   syslog) `slurmctld.log` in `StateSaveLocation` and `slurmd.log` in the agent's
//!   `SlurmdSpoolDir`.
//! - `-h`, `-V`.
//!
//! Under `AuthType=auth/sluice` (the default) both need the cluster key
//! (`AuthInfo=key=FILE`, else `cluster.key` next to slurm.conf; mode 0600, owned by root
//! or the daemon's user). The controller makes it when there is none (copy it to every
//! host); an agent without it does not start. Under `auth/munge` they need the host's
//! munged instead (`AuthInfo=socket=`, default `/run/munge/munge.socket.2`), and check
//! that it answers before they start. Their pid files are `SlurmctldPidFile` and
//! `SlurmdPidFile` (`%n`, `%h`).
//!
//! `sluice up` starts its agents through `sluice agent` too, with internal long options
//! (`--state-dir`, `--node`, `--log-file`, `--debug`): local agents on Unix sockets in
//! its state directory, no key, no configuration file.
//!
//! Stopping an agent (SIGTERM, SIGINT) never ends its jobs: each runs under a
//! supervisor of its own (`slurmstepd`, this binary again, [`stepd`]), which the next
//! agent of the node adopts, so that slurmd may be restarted or upgraded while jobs
//! run. The one exception is `sluice up`'s own agents on SIGINT (what `sluice up` sends
//! them as it stops, and what Ctrl-C sends its whole process group): the quick-start
//! cluster stops with its jobs.

use std::path::{Path, PathBuf};

use sluice_conf::acct_gather_conf::GatherConf;
use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_conf::log_conf::DebugLevel;
use sluice_conf::net_conf::{AuthType, NetConf};
use sluice_ctld::config::ClusterConfig;

/// slurm.conf's path when neither `-f` nor `SLURM_CONF` gives one (Debian's and
/// Slurm's own default).
pub const DEFAULT_SLURM_CONF: &str = "/etc/slurm/slurm.conf";

/// What Slurm's daemons print for `-V`.
const VERSION: &str = "slurm 22.05.8";

/// The slurm.conf a daemon or command reads: `-f`'s, else `SLURM_CONF`, else
/// [`DEFAULT_SLURM_CONF`]; made absolute (a daemon leaves its working directory).
pub fn slurm_conf_path(given: Option<&str>) -> PathBuf {
    let p = given
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("SLURM_CONF")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SLURM_CONF));
    absolute(&p)
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// The flags both daemons share, and `slurmd`'s own.
#[derive(Debug, Default)]
struct Flags {
    foreground: bool,
    config: Option<String>,
    node: Option<String>,
    verbose: u8,
    log_file: Option<String>,
    /// `sluice up`'s agents: their cluster's state directory.
    state_dir: Option<String>,
    /// `sluice up`'s agents: their level.
    debug: Option<DebugLevel>,
    /// `sluice up`'s agents: slurm.conf's `JobAcctGatherType`, as written.
    gather_type: Option<String>,
    /// `sluice up`'s agents: slurm.conf's `JobAcctGatherFrequency`, as written.
    gather_frequency: Option<String>,
    /// `-Z`: the agent registers its node itself (a dynamic node).
    dynamic: bool,
    /// `--conf`: the dynamic node's parameters (`CPUs=... RealMemory=... Gres=...`).
    dynamic_conf: Option<String>,
}

const CTLD_OPTIONS: &[Opt] = &[
    Opt::flag("foreground", Some('D')),
    Opt::required("config", Some('f')),
    Opt::required("logfile", Some('L')),
    Opt::flag("verbose", Some('v')),
    Opt::flag("help", Some('h')),
    Opt::flag("version", Some('V')),
];

const AGENT_OPTIONS: &[Opt] = &[
    Opt::flag("foreground", Some('D')),
    Opt::required("config", Some('f')),
    Opt::required("nodename", Some('N')),
    Opt::required("node", None).alias_of("nodename"),
    Opt::required("logfile", Some('L')),
    Opt::required("log-file", None).alias_of("logfile"),
    Opt::flag("verbose", Some('v')),
    Opt::flag("help", Some('h')),
    Opt::flag("version", Some('V')),
    // Slurm's "clean start" (-c): nothing of a previous agent's jobs is kept anyway.
    Opt::flag("clean", Some('c')),
    Opt::required("state-dir", None),
    Opt::required("debug", None),
    Opt::required("acct-gather-type", None),
    Opt::required("acct-gather-frequency", None),
    // Slurm's dynamic nodes: the agent registers a node the controller does not know.
    Opt::flag("dynamic", Some('Z')),
    Opt::required("conf", None),
];

fn usage(me: &str) -> String {
    if me == "slurmctld" {
        "Usage: slurmctld [OPTIONS]\n\
         \x20 -D            Run daemon in foreground, with logging copied to stdout.\n\
         \x20 -f file       Use specified file for slurmctld configuration.\n\
         \x20 -h            Print this help message.\n\
         \x20 -L logfile    Log messages to the specified file.\n\
         \x20 -v            Verbose mode. Multiple -v's increase verbosity.\n\
         \x20 -V            Print version information and exit.\n"
            .to_string()
    } else {
        "Usage: slurmd [OPTIONS]\n\
         \x20 -c            Force cleanup of slurmd shared memory.\n\
         \x20 --conf        Dynamic node configuration, works with -Z.\n\
         \x20 -D            Run daemon in foreground, with logging copied to stdout.\n\
         \x20 -f file       Use specified file for slurmd configuration.\n\
         \x20 -h            Print this help message.\n\
         \x20 -L logfile    Log messages to the specified file.\n\
         \x20 -N node       Run the daemon for specified nodename.\n\
         \x20 -v            Verbose mode. Multiple -v's increase verbosity.\n\
         \x20 -V            Print version information and exit.\n\
         \x20 -Z            Start as Dynamic Normal node.\n"
            .to_string()
    }
}

/// The flags of daemon `me`; exits after `-h`, `-V` or an option error (status 1, as
/// Slurm's daemons).
fn flags(me: &str, args: Vec<String>) -> Flags {
    let table = if me == "slurmctld" {
        CTLD_OPTIONS
    } else {
        AGENT_OPTIONS
    };
    let mut f = Flags::default();
    for item in Getopt::new(table, args, Order::Permute) {
        let o = match item {
            Ok(Parsed::Opt(o)) => o,
            Ok(Parsed::Operand(w)) => {
                eprintln!("{me}: error: unexpected argument '{w}'");
                eprint!("{}", usage(me));
                std::process::exit(1)
            }
            Err(e) => {
                eprintln!("{me}: {e}");
                eprint!("{}", usage(me));
                std::process::exit(1)
            }
        };
        match o.name() {
            "foreground" => f.foreground = true,
            "config" => f.config = Some(o.value().to_string()),
            "nodename" => f.node = Some(o.value().to_string()),
            "logfile" => f.log_file = Some(o.value().to_string()),
            "verbose" => f.verbose = f.verbose.saturating_add(1),
            "state-dir" => f.state_dir = Some(o.value().to_string()),
            "dynamic" => f.dynamic = true,
            "conf" => f.dynamic_conf = Some(o.value().to_string()),
            "acct-gather-type" => f.gather_type = Some(o.value().to_string()),
            "acct-gather-frequency" => f.gather_frequency = Some(o.value().to_string()),
            "debug" => match DebugLevel::parse(o.value()) {
                Ok(l) => f.debug = Some(l),
                Err(e) => {
                    eprintln!("{me}: error: --debug: {e}");
                    std::process::exit(1)
                }
            },
            "help" => {
                print!("{}", usage(me));
                std::process::exit(0)
            }
            "version" => {
                println!("{VERSION}");
                std::process::exit(0)
            }
            _ => {}
        }
    }
    f
}

/// The agent's gathering settings from slurm.conf's.
fn gather_settings(g: &GatherConf) -> sluice_noded::usage::Settings {
    use sluice_conf::acct_gather_conf::GatherType;
    use sluice_noded::usage::Source;
    sluice_noded::usage::Settings {
        source: match g.kind {
            GatherType::Auto => Source::Auto,
            GatherType::Linux => Source::Proc,
            GatherType::Cgroup => Source::Cgroup,
            GatherType::None => Source::Off,
        },
        task_secs: g.task_secs(),
    }
}

/// Prints `me: error: message` and returns 1.
fn fail(me: &str, message: impl std::fmt::Display) -> i32 {
    eprintln!("{me}: error: {message}");
    1
}

/// The configuration at `path`, its warnings printed; Err(status) after saying why not.
fn read_conf(me: &str, path: &Path) -> Result<ClusterConfig, i32> {
    match ClusterConfig::read(path) {
        Ok((conf, warnings)) => {
            for w in warnings {
                eprintln!("{me}: warning: {w}");
            }
            Ok(conf)
        }
        Err(e) => Err(fail(me, e)),
    }
}

/// Detaches from the terminal unless `foreground` (see the module documentation).
/// Called before any thread starts.
fn detach(me: &str, foreground: bool) -> Result<(), i32> {
    if foreground {
        return Ok(());
    }
    // SAFETY: no thread runs yet (the runtime is made after this); daemon(3) forks,
    // the parent exits, the child makes a new session and points its standard streams
    // at /dev/null.
    if unsafe { libc::daemon(0, 0) } != 0 {
        return Err(fail(
            me,
            format!(
                "cannot detach: {}",
                sluice_proto::oserror::describe(&std::io::Error::last_os_error())
            ),
        ));
    }
    Ok(())
}

/// Writes this process's pid to `path` (a warning when it cannot: the daemon runs on);
/// the path to remove at the end.
fn write_pid_file(path: &Path) -> Option<PathBuf> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(path, format!("{}\n", std::process::id())) {
        Ok(()) => Some(path.to_path_buf()),
        Err(e) => {
            tracing::warn!(
                "cannot write the pid file {}: {}",
                path.display(),
                sluice_proto::oserror::describe(&e)
            );
            None
        }
    }
}

/// Installs logging at `level`: to `file` if given, else to standard error in the
/// foreground, else to `fallback`.
/// Installs the daemon's log; the file it logs to (None: standard error).
fn install_log(
    me: &str,
    file: Option<PathBuf>,
    foreground: bool,
    fallback: PathBuf,
    level: DebugLevel,
) -> Result<Option<PathBuf>, i32> {
    let file = match (file, foreground) {
        (Some(f), _) => Some(absolute(&f)),
        (None, true) => None,
        (None, false) => Some(fallback),
    };
    let r = match &file {
        Some(f) => crate::daemon_log::install(f, level),
        None => crate::daemon_log::install_stderr(level),
    };
    r.map(|()| file)
        .map_err(|e| fail(me, format!("cannot log to {e}")))
}

/// Runs a job's supervisor (`slurmstepd stepd DIR ...`, started by an agent; see
/// `sluice_noded::stepd`); its exit status. It logs where its agent does.
pub fn stepd(args: Vec<String>) -> i32 {
    // Named as Slurm's is in `ps` and `top`: its binary is reached through the agent's
    // descriptor of it (`/proc/self/fd/N`), whose number would be the name.
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"slurmstepd".as_ptr());
    }
    sluice_noded::usage::gpu::nvidia_with(nvidia_usage);
    let s = match sluice_noded::stepd::Stepd::prepare(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("slurmstepd: error: {e}");
            return 1;
        }
    };
    if let Some((file, level)) = s.log() {
        let level = DebugLevel::parse(level).unwrap_or_default();
        if let Err(e) = crate::daemon_log::install(file, level) {
            eprintln!("slurmstepd: error: cannot log to {e}");
        }
    }
    s.run()
}

/// A supervisor's NVIDIA GPUs through NVML (loaded where it is installed).
fn nvidia_usage() -> Option<Box<dyn sluice_noded::usage::gpu::GpuSource>> {
    struct Nvml(sluice_ctld::gpu_detect::NvmlUsage);
    impl sluice_noded::usage::gpu::GpuSource for Nvml {
        fn sample(&mut self, index: u32) -> Option<sluice_noded::usage::gpu::GpuSample> {
            self.0
                .sample(index)
                .map(|s| sluice_noded::usage::gpu::GpuSample {
                    util: s.util,
                    mem: s.mem_used,
                    power_mw: s.power_mw,
                })
        }
    }
    let sampler = sluice_ctld::gpu_detect::NvmlProvider::new(Path::new("/")).usage_sampler()?;
    Some(Box::new(Nvml(sampler)))
}

/// Checks that munged at `socket` makes credentials (`auth/munge`).
fn munged_answers(me: &str, socket: &Path) -> Result<sluice_proto::auth::Scheme, i32> {
    match sluice_proto::munge::encode(socket, "GET", "/v1/ping", b"") {
        Ok(_) => Ok(sluice_proto::auth::Scheme::Munge(socket.to_path_buf())),
        Err(e) => Err(fail(
            me,
            format!(
                "AuthType=auth/munge: no credential from munged at {}: {e} (is munged running?)",
                socket.display()
            ),
        )),
    }
}

/// Resolves after SIGINT or SIGTERM.
pub(crate) async fn terminated() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("signal handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("Terminate signal (SIGINT or SIGTERM) received");
}

/// Runs `slurmctld` (or `sluice ctld`) with `args`; its exit status.
pub fn ctld(args: Vec<String>) -> i32 {
    let me = "slurmctld";
    let f = flags(me, args);
    let path = slurm_conf_path(f.config.as_deref());
    let mut conf = match read_conf(me, &path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let net = conf.net.clone();
    if net.controller().is_none() {
        return fail(
            me,
            format!(
                "{}: SlurmctldHost is not set: it names this controller's host",
                path.display()
            ),
        );
    }
    let here = sluice_ctld::config::this_host();
    let Some(index) = net.controller_index(&here) else {
        let names: Vec<&str> = net.controllers.iter().map(|c| c.name.as_str()).collect();
        return fail(
            me,
            format!(
                "This host ({here}) is not a valid controller (SlurmctldHost={})",
                names.join(",")
            ),
        );
    };
    let several = net.controllers.len() > 1;
    let sqlite = conf.site.storage.kind == sluice_conf::storage_conf::StorageType::Sqlite;
    if several && sqlite && index > 0 {
        return fail(
            me,
            format!(
                "{}: this host ({here}) is a backup controller (SlurmctldHost #{}), which \
                 needs the state in PostgreSQL (StorageType=postgresql in sluice.conf): \
                 controllers cannot share a SQLite file safely",
                path.display(),
                index + 1
            ),
        );
    }
    let key_file = net.key_file(&path);
    let (auth, made) = match net.auth {
        AuthType::Munge => match munged_answers(me, &net.auth_socket()) {
            Ok(a) => (a, false),
            Err(code) => return code,
        },
        AuthType::Sluice => match sluice_proto::auth::read_private_key(&key_file) {
            Ok(k) => (sluice_proto::auth::Scheme::Key(k), false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match sluice_proto::auth::ensure_key(&key_file) {
                    Ok(k) => (sluice_proto::auth::Scheme::Key(k), true),
                    Err(e) => {
                        return fail(
                            me,
                            format!(
                                "cannot make the cluster key {}: {}",
                                key_file.display(),
                                sluice_proto::oserror::describe(&e)
                            ),
                        )
                    }
                }
            }
            Err(e) => return fail(me, format!("cluster key: {e}")),
        },
    };
    let state_dir = absolute(&net.state_save_location);
    if let Err(e) = std::fs::create_dir_all(&state_dir) {
        return fail(
            me,
            format!(
                "StateSaveLocation {}: {}",
                state_dir.display(),
                sluice_proto::oserror::describe(&e)
            ),
        );
    }
    if sluice_proto::Client::new(sluice_proto::paths::controller_socket(&state_dir))
        .get::<serde_json::Value>("/v1/ping")
        .is_ok()
    {
        return fail(
            me,
            format!("a controller is already running in {}", state_dir.display()),
        );
    }
    let level = conf.logging.slurmctld_debug.raised(f.verbose);
    let log_file = f.log_file.clone().map(PathBuf::from).or_else(|| {
        conf.logging
            .slurmctld_log_file
            .as_deref()
            .map(PathBuf::from)
    });
    if let Err(code) = install_log(
        me,
        log_file,
        f.foreground,
        state_dir.join("slurmctld.log"),
        level,
    ) {
        return code;
    }
    // A controller started again after stepping down is detached already.
    let again = crate::standby::started_again();
    if let Err(code) = detach(me, f.foreground || again) {
        return code;
    }
    tracing::info!(
        "slurmctld version {} started on cluster {}",
        env!("CARGO_PKG_VERSION"),
        conf.cluster_name
    );
    if made {
        tracing::info!(
            "created the cluster key {}: copy it (mode 0600) to every host of the cluster",
            key_file.display()
        );
    }
    let pid_file = write_pid_file(&net.slurmctld_pid_file);
    conf.agents_over_tcp = true;
    let listen = std::net::SocketAddr::from(([0, 0, 0, 0], net.slurmctld_port));
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let network = |epoch| sluice_ctld::server::Network {
        listen: Some(listen),
        auth: Some(auth.clone()),
        conf_hash: std::fs::read(&path)
            .ok()
            .map(|t| sluice_ctld::server::conf_hash(&t)),
        pages: Some(crate::ui::controller_pages(listen)),
        conf_path: Some(path.to_path_buf()),
        // slurmd runs on its own: its jobs outlive this daemon.
        agents_stop_with_it: false,
        epoch,
    };
    let result = if several && !sqlite {
        crate::standby::run_active_or_standby(&runtime, conf, &state_dir, index, &auth, network)
    } else {
        if several {
            tracing::warn!(
                "SlurmctldHost lists backup controllers, which need StorageType=postgresql: \
                 this controller runs alone"
            );
        }
        runtime.block_on(sluice_ctld::server::run(
            conf,
            &state_dir,
            network(None),
            terminated(),
        ))
    };
    // Stopped and flushed: a forecast still computing (minutes for 100,000 queued jobs
    // on 10,000 nodes) is not waited for.
    runtime.shutdown_timeout(sluice_ctld::server::BLOCKING_GRACE);
    if let Some(p) = pid_file {
        let _ = std::fs::remove_file(p);
    }
    match result {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("{e}");
            fail(me, e)
        }
    }
}

/// Runs `slurmd` (or `sluice agent`) with `args`; its exit status.
pub fn agent(args: Vec<String>) -> i32 {
    let me = "slurmd";
    // Jobs' supervisors start from `sluice-stepd` only where it is of this build.
    sluice_noded::supervisors::expect_build(crate::BUILD_ID);
    let f = flags(me, args);
    if let Err(e) = check_dynamic_conf(&f) {
        return fail(me, e);
    }
    if let Some(dir) = f.state_dir.clone() {
        return local_agent(&f, &absolute(Path::new(&dir)));
    }
    let path = slurm_conf_path(f.config.as_deref());
    let conf = match read_conf(me, &path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let net: NetConf = conf.net.clone();
    let host = sluice_ctld::config::this_host();
    let node = f.node.clone().unwrap_or_else(|| host.clone());
    let known = conf.node_id(&node);
    if f.dynamic {
        // What this host has, unless `--conf` says: the controller creates the node
        // from it if it does not know it (a node of the file registers as any other).
        let found = sluice_ctld::config::host_hardware(
            &conf,
            known.unwrap_or(sluice_core::NodeId(conf.cluster.nodes.len() as u32)),
        );
        sluice_noded::register_as_dynamic(dynamic_line(&node, &f, &found));
    }
    // A dynamic node the file does not have: no place of its own in the file's lists
    // (no `Port=`, no GRES devices of gres.conf), so none of their entries.
    let Some(id) = known.or_else(|| f.dynamic.then_some(sluice_core::NodeId(u32::MAX))) else {
        return fail(
            me,
            format!(
                "Unable to determine this slurmd's NodeName: {node} is not a node of {}",
                path.display()
            ),
        );
    };
    let Some(controller) = net.controller_addr() else {
        return fail(
            me,
            format!(
                "{}: SlurmctldHost is not set: agents find their controller there",
                path.display()
            ),
        );
    };
    let auth = match net.auth {
        AuthType::Munge => match munged_answers(me, &net.auth_socket()) {
            Ok(a) => a,
            Err(code) => return code,
        },
        AuthType::Sluice => {
            let key_file = net.key_file(&path);
            match sluice_proto::auth::read_private_key(&key_file) {
                Ok(k) => sluice_proto::auth::Scheme::Key(k),
                Err(e) => {
                    return fail(
                        me,
                        format!(
                            "cannot read the cluster key {}: {} (copy the controller's to \
                             this host)",
                            key_file.display(),
                            sluice_proto::oserror::describe(&e)
                        ),
                    )
                }
            }
        }
    };
    let port = conf
        .node_addresses
        .get(id.index())
        .and_then(|a| a.port)
        .unwrap_or(net.slurmd_port);
    let spool = absolute(&net.spool_dir(&host, &node));
    if let Err(e) = std::fs::create_dir_all(&spool) {
        return fail(
            me,
            format!(
                "SlurmdSpoolDir {}: {}",
                spool.display(),
                sluice_proto::oserror::describe(&e)
            ),
        );
    }
    let level = conf.logging.slurmd_debug.raised(f.verbose);
    let log_file = f.log_file.clone().map(PathBuf::from).or_else(|| {
        conf.logging
            .slurmd_log_file_for(&host, &node)
            .map(PathBuf::from)
    });
    match install_log(me, log_file, f.foreground, spool.join("slurmd.log"), level) {
        Ok(Some(file)) => sluice_noded::log_supervisors_to(file, level.name()),
        Ok(None) => {}
        Err(code) => return code,
    }
    if let Err(code) = detach(me, f.foreground) {
        return code;
    }
    sluice_noded::gather_with(gather_settings(&conf.gather));
    let pid_file = write_pid_file(&net.pid_file(&host, &node));
    let setup = sluice_noded::TcpSetup {
        listen: std::net::SocketAddr::from(([0, 0, 0, 0], port)),
        auth,
        controller,
        backups: net.controller_addrs().into_iter().skip(1).collect(),
        vouch_socket: Some(net.auth_socket()),
        job_env: vec![("SLURM_CONF".into(), path.display().to_string())],
        // Checked by the controller against the node's line (slurmd's registration).
        hardware: Some(sluice_ctld::config::host_hardware(&conf, id)),
        conf_hash: std::fs::read(&path)
            .ok()
            .map(|t| sluice_ctld::server::conf_hash(&t)),
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let result = runtime.block_on(sluice_noded::run_with(
        &spool,
        &node,
        sluice_noded::Transport::Tcp(Box::new(setup)),
        terminated(),
    ));
    if let Some(p) = pid_file {
        let _ = std::fs::remove_file(p);
    }
    match result {
        Ok(()) => {
            tracing::info!("{node}: slurmd stopped");
            0
        }
        Err(e) => {
            tracing::error!("{node}: {e}");
            fail(me, e)
        }
    }
}

/// `sluice up`'s agent for `--node` in the state directory `state_dir`.
fn local_agent(f: &Flags, state_dir: &Path) -> i32 {
    let Some(node) = f.node.clone() else {
        return fail("sluice agent", "--state-dir needs --node");
    };
    let log = f
        .log_file
        .clone()
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::up::default_agent_log(state_dir, &node));
    let level = f.debug.unwrap_or_default();
    if let Err(e) = crate::daemon_log::install(&log, level) {
        return fail("sluice agent", format!("cannot log to {e}"));
    }
    sluice_noded::log_supervisors_to(log.clone(), level.name());
    match GatherConf::parse(f.gather_type.as_deref(), f.gather_frequency.as_deref()) {
        Ok(g) => sluice_noded::gather_with(gather_settings(&g)),
        Err(e) => return fail("sluice agent", e),
    }
    if f.dynamic {
        // `sluice up`'s nodes are all on this host: `--conf` says what each one has.
        let found = sluice_ctld::config::detected_hardware();
        sluice_noded::register_as_dynamic(dynamic_line(&node, f, &found));
    }
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    // SIGTERM: this agent stops (a restart), its jobs run on; SIGINT: the cluster stops
    // (`sluice up` stopping, or Ctrl-C), its jobs with it.
    let stop = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("signal handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => sluice_noded::Stop::EndJobs,
            _ = term.recv() => sluice_noded::Stop::LeaveJobs,
        }
    };
    let r = runtime.block_on(sluice_noded::run_until(
        state_dir,
        &node,
        sluice_noded::Transport::Local,
        stop,
    ));
    match r {
        Ok(()) => {
            tracing::info!("{node}: agent stopped");
            0
        }
        Err(e) => {
            tracing::error!("{node}: {e}");
            fail("sluice agent", e)
        }
    }
}

/// `--conf` without `-Z`, or naming what only slurm.conf may (`NodeName=`, `Port=`):
/// refused with Slurm's message.
fn check_dynamic_conf(f: &Flags) -> Result<(), String> {
    let Some(conf) = &f.dynamic_conf else {
        return Ok(());
    };
    if !f.dynamic {
        return Err("--conf works with -Z only".into());
    }
    let lower = conf.to_ascii_lowercase();
    for bad in ["NodeName=", "Port="] {
        if lower.contains(&bad.to_ascii_lowercase()) {
            return Err(format!("option '{bad}' not allowed in --conf"));
        }
    }
    Ok(())
}

/// The line a dynamic node `node` registers with: `--conf`'s parameters, else what
/// its host has (`found`), as Slurm's slurmd -Z sends them.
fn dynamic_line(node: &str, f: &Flags, found: &sluice_proto::types::NodeHardware) -> String {
    match &f.dynamic_conf {
        Some(conf) => format!("NodeName={node} {}", conf.trim()),
        None => {
            let boards = found.boards.max(1);
            format!(
                "NodeName={node} CPUs={} Boards={boards} SocketsPerBoard={} CoresPerSocket={} \
                 ThreadsPerCore={} RealMemory={}",
                found.cpus,
                (found.sockets / boards).max(1),
                found.cores.max(1),
                found.threads.max(1),
                found.real_memory
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemons_read_slurms_flags_and_sluice_ups() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let f = flags(
            "slurmd",
            words(&["-D", "-vv", "-N", "node02", "-f", "/etc/x.conf"]),
        );
        assert!(f.foreground);
        assert_eq!(f.verbose, 2);
        assert_eq!(f.node.as_deref(), Some("node02"));
        assert_eq!(f.config.as_deref(), Some("/etc/x.conf"));
        let f = flags(
            "slurmd",
            words(&[
                "--node",
                "n1",
                "--state-dir",
                "/s",
                "--log-file",
                "/s/l",
                "--debug",
                "debug2",
                "--acct-gather-type",
                "jobacct_gather/linux",
                "--acct-gather-frequency",
                "task=5",
            ]),
        );
        assert_eq!(f.node.as_deref(), Some("n1"));
        let g = GatherConf::parse(f.gather_type.as_deref(), f.gather_frequency.as_deref());
        let g = gather_settings(&g.unwrap());
        assert_eq!(
            (g.source, g.task_secs),
            (sluice_noded::usage::Source::Proc, 5)
        );
        assert_eq!(f.state_dir.as_deref(), Some("/s"));
        assert_eq!(f.log_file.as_deref(), Some("/s/l"));
        assert_eq!(f.debug, Some(DebugLevel::Debug2));
        let f = flags("slurmctld", words(&["-DvL", "/var/log/c.log"]));
        assert!(f.foreground);
        assert_eq!(f.verbose, 1);
        assert_eq!(f.log_file.as_deref(), Some("/var/log/c.log"));
    }

    #[test]
    fn slurm_conf_is_the_flag_then_the_environment_then_the_default() {
        assert_eq!(
            slurm_conf_path(Some("/a/slurm.conf")),
            Path::new("/a/slurm.conf")
        );
        assert!(slurm_conf_path(Some("rel.conf")).is_absolute());
    }
}
