//! What the Slurm commands share: finding the controller, Slurm's message shapes, job
//! id arguments and refused command lines ([`Refusal`]: getopt's errors in glibc's
//! words after the program name, as every Slurm 22.05 command prints them).
//! Durations are `sluice_conf::duration`'s, points in time `sluice_proto::time`'s.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sluice_conf::getopt::{GetoptError, Opt};
use sluice_conf::options::OptionError;
use sluice_proto::{Client, ClientError, Signer};

/// Exit status of Slurm's clients for option and value errors.
pub const USAGE_EXIT: i32 = 255;

/// The environment variable naming a controller's TCP address (`host:port`, as given
/// to `sluice up --listen`); without it the commands use the Unix socket.
pub const CONTROLLER_ENV: &str = "SLUICE_CONTROLLER";
/// The environment variable naming the cluster key file for TCP (default:
/// `cluster.key` in the state directory).
pub const KEY_FILE_ENV: &str = "SLUICE_KEY_FILE";

/// Where this shell's cluster is (see [`locate`]).
enum Located {
    /// `SLUICE_CONTROLLER`: its address, and the key read from `SLUICE_KEY_FILE`.
    Keyed(String, Vec<u8>),
    /// A controller's Unix socket on this host.
    Local(PathBuf),
    /// slurm.conf's `SlurmctldHost:SlurmctldPort`, and slurm.conf's settings.
    Remote(String, sluice_conf::net_conf::NetConf),
}

/// The address of this host as its controller sees it (the local end of a route to the
/// controller; nothing is sent), or 127.0.0.1 for a controller on this host: where
/// srun runs, for its tasks' `SLURM_LAUNCH_NODE_IPADDR`.
pub(crate) fn launch_address() -> std::net::IpAddr {
    let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
    let addr = match locate() {
        Located::Keyed(addr, _) | Located::Remote(addr, _) => addr,
        Located::Local(_) => return loopback,
    };
    use std::net::{ToSocketAddrs, UdpSocket};
    let local = || -> Option<std::net::IpAddr> {
        let target = addr.to_socket_addrs().ok()?.next()?;
        let bind = if target.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let socket = UdpSocket::bind(bind).ok()?;
        // A UDP connect only chooses the route and the local address.
        socket.connect(target).ok()?;
        Some(socket.local_addr().ok()?.ip())
    };
    local().unwrap_or(loopback)
}

/// Finds this shell's cluster, in order:
/// 1. `SLUICE_CONTROLLER` (`host:port`): over TCP, signed with the key in
///    `SLUICE_KEY_FILE` (default `cluster.key` in the state directory) — for whoever
///    holds the key.
/// 2. `SLUICE_STATE_DIR`: the controller's Unix socket there (`sluice up`).
/// 3. The state directory of `SLURM_CONF`'s `StateSaveLocation`, or the per-user one,
///    when a controller's socket is there.
/// 4. slurm.conf (`SLURM_CONF`, else `/etc/slurm/slurm.conf`) naming a `SlurmctldHost`:
///    its controller's socket in `StateSaveLocation` when this is that host, else
///    `SlurmctldHost:SlurmctldPort` over TCP.
/// 5. The socket of 3, which says that no controller runs.
///
/// Exits with Slurm's connect-failure message when the key for 1 cannot be read, or
/// with the file's error when the slurm.conf of 4 is malformed.
fn locate() -> Located {
    if let Some(addr) = std::env::var(CONTROLLER_ENV).ok().filter(|v| !v.is_empty()) {
        let state = sluice_proto::paths::state_dir();
        let key_file = std::env::var_os(KEY_FILE_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| state.join("cluster.key"));
        return match sluice_proto::auth::read_key(&key_file) {
            Ok(key) => Located::Keyed(addr, key),
            Err(e) => fail(
                &me(),
                format!(
                    "Unable to contact slurm controller (cannot read the cluster key {}: {e})",
                    key_file.display()
                ),
                1,
            ),
        };
    }
    let state = sluice_proto::paths::state_dir();
    let socket = sluice_proto::paths::controller_socket(&state);
    let explicit =
        std::env::var_os(sluice_proto::paths::STATE_DIR_ENV).is_some_and(|v| !v.is_empty());
    // Several controllers: whichever is active, never the socket of one that may
    // stand by (or be gone) on this host.
    if !explicit {
        if let Some(net) = net_conf(false).filter(|n| n.controllers.len() > 1) {
            let addr = net.controller_addr().expect("listed");
            return Located::Remote(addr, net);
        }
    }
    if explicit || socket.exists() {
        return Located::Local(socket);
    }
    if let Some(net) = net_conf(true) {
        if let Some(addr) = net.controller_addr() {
            let here = sluice_proto::paths::controller_socket(&net.state_save_location);
            if here.exists() {
                return Located::Local(here);
            }
            return Located::Remote(addr, net);
        }
    }
    Located::Local(socket)
}

/// The settings of slurm.conf (`SLURM_CONF`, else `/etc/slurm/slurm.conf`), when there
/// is one; a malformed file ends the command when `strict`, else counts as none.
pub(super) fn net_conf(strict: bool) -> Option<sluice_conf::net_conf::NetConf> {
    let path = crate::daemons::slurm_conf_path(None);
    if !path.is_file() {
        return None;
    }
    let net = sluice_conf::slurm_conf::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|c| sluice_conf::net_conf::NetConf::from_conf(&c));
    match net {
        Ok(n) => Some(n),
        Err(e) if strict => fail(&me(), e, 1),
        Err(_) => None,
    }
}

/// Who signs this user's requests under `net`'s `AuthType`: the local agent, or munged.
fn user_signer(net: &sluice_conf::net_conf::NetConf) -> Signer {
    match net.auth {
        sluice_conf::net_conf::AuthType::Sluice => Signer::Vouch(net.auth_socket()),
        sluice_conf::net_conf::AuthType::Munge => Signer::Munge(net.auth_socket()),
    }
}

/// A client for the controller of the cluster this shell belongs to ([`locate`]): over
/// TCP signed with the key, on a Unix socket, or over TCP with each request's
/// credential from this host's agent (which tells the controller this process's uid) or
/// under `auth/munge` from munged.
pub fn controller() -> Client {
    match locate() {
        Located::Keyed(addr, key) => Client::tcp(&addr, key),
        Located::Local(socket) => Client::new(socket),
        Located::Remote(_, net) if net.controllers.len() > 1 => Client::controllers(
            &net.controller_addrs(),
            several_signer(&net),
            Some(takeover_patience(&net)),
        ),
        Located::Remote(addr, net) => Client::signed(&addr, user_signer(&net)),
    }
}

/// How long a command waits for a takeover while no controller is active: the
/// controllers' `SlurmctldTimeout` and one `MessageTimeout` (10 s), as Slurm's
/// commands keep asking the controllers in turn.
fn takeover_patience(net: &sluice_conf::net_conf::NetConf) -> std::time::Duration {
    std::time::Duration::from_secs(net.slurmctld_timeout + 10)
}

/// Who signs a command's requests to one of several controllers: this host's agent
/// (or munged); on a controller's host without an agent, the local controller, which
/// vouches while it is the active one, else (it stands by or is gone: its socket, if
/// left, answers nothing) the cluster key for whoever can read it (root, the
/// controllers' user), so that the command still fails over to the active controller.
fn several_signer(net: &sluice_conf::net_conf::NetConf) -> Signer {
    let local = sluice_proto::paths::controller_socket(&net.state_save_location);
    if net.auth == sluice_conf::net_conf::AuthType::Sluice && !net.auth_socket().exists() {
        if std::os::unix::net::UnixStream::connect(&local).is_ok() {
            return Signer::Vouch(local);
        }
        let key_file = net.key_file(&crate::daemons::slurm_conf_path(None));
        if let Ok(key) = sluice_proto::auth::read_key(&key_file) {
            return Signer::Key(std::sync::Arc::new(key));
        }
    }
    user_signer(net)
}

/// Each controller of this shell's cluster by name, in `SlurmctldHost`'s order, with a
/// client for it alone (`scontrol ping`, `scontrol takeover`); `None` when only one is
/// known (a local socket, `SLUICE_CONTROLLER`, one `SlurmctldHost`).
pub fn each_controller() -> Option<Vec<(String, Client)>> {
    match locate() {
        Located::Remote(_, net) if net.controllers.len() > 1 => {
            let signer = several_signer(&net);
            Some(
                net.controllers
                    .iter()
                    .zip(net.controller_addrs())
                    .map(|(c, addr)| {
                        (
                            c.name.clone(),
                            Client::signed(&addr, signer.clone())
                                .with_timeout(std::time::Duration::from_secs(10)),
                        )
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Who signs this process's requests to agents over TCP (`srun`): the key's holder,
/// this host's agent or munged, or on the controller's host the controller, which
/// vouches for local callers too (under `auth/munge`, munged).
pub fn agent_signer() -> Signer {
    match locate() {
        Located::Keyed(_, key) => Signer::Key(std::sync::Arc::new(key)),
        Located::Local(socket) => match net_conf(false) {
            Some(net) if net.auth == sluice_conf::net_conf::AuthType::Munge => {
                Signer::Munge(net.auth_socket())
            }
            _ => Signer::Vouch(socket),
        },
        Located::Remote(_, net) => user_signer(&net),
    }
}

/// This command's name, as it was called.
fn me() -> String {
    std::env::args()
        .next()
        .and_then(|a| {
            PathBuf::from(a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "sluice".into())
}

/// The cluster's name (slurm.conf's `ClusterName`), as the controller says it; empty
/// if it cannot be asked.
pub fn cluster_name(client: &Client) -> String {
    client
        .get::<sluice_proto::types::ConfigInfo>("/v1/config")
        .map(|c| c.cluster_name)
        .unwrap_or_default()
}

/// The leading integer of `s` as C's `strtol` reads it (blanks, an optional sign, then
/// digits; saturating), and the rest after it; 0 and all of `s` where there is no
/// number. What Slurm's commands read with `atoi` and `strtol`.
pub fn strtol(s: &str) -> (i64, &str) {
    let t = s.trim_start();
    let sign = usize::from(t.starts_with(['-', '+']));
    let digits = t[sign..].len()
        - t[sign..]
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .len();
    if digits == 0 {
        return (0, s);
    }
    let n = t[sign..sign + digits].bytes().fold(0i64, |n, d| {
        n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    (if t.starts_with('-') { -n } else { n }, &t[sign + digits..])
}

/// Prints `cmd: error: message` and exits with `code`.
pub fn fail(cmd: &str, message: impl std::fmt::Display, code: i32) -> ! {
    eprintln!("{cmd}: error: {message}");
    std::process::exit(code)
}

/// The message for a request that did not reach or satisfy the controller.
pub fn describe(e: &ClientError) -> String {
    match e {
        ClientError::Connect { .. } => {
            "Unable to contact slurm controller (connect failure)".to_string()
        }
        ClientError::Credential { .. } => {
            format!("Unable to contact slurm controller ({e})")
        }
        other => other.to_string(),
    }
}

/// The user a command's `-u` word names, a user name or a uid, as Slurm's commands take
/// them; `None` for someone the user database does not know.
pub fn user_named(word: &str) -> Option<nix::unistd::User> {
    match word.parse::<u32>() {
        Ok(uid) => nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)),
        Err(_) => nix::unistd::User::from_name(word),
    }
    .ok()
    .flatten()
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// This host's short name.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.split('.').next().unwrap_or("").to_string())
        .unwrap_or_else(|| "localhost".into())
}

/// The current directory as an absolute path.
pub fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

/// The working directory `-D`/`--chdir` names (relative to the caller's), or the
/// caller's own.
pub fn work_dir(chdir: Option<&str>) -> String {
    match chdir {
        Some(d) if Path::new(d).is_absolute() => d.to_string(),
        Some(d) => cwd().join(d).display().to_string(),
        None => cwd().display().to_string(),
    }
}

/// A `SLURM_*` style job id argument: `123`, `123_4`, `123_[1-3]`, `123.batch` (step
/// part ignored). Returns (job, task list or none).
pub fn parse_job_arg(s: &str) -> Option<Vec<(u64, Option<u32>)>> {
    let s = s.split('.').next()?;
    // A heterogeneous job's component: `LEADER+OFFSET`, whose id is LEADER + OFFSET.
    if let Some((leader, offset)) = s.split_once('+') {
        let leader: u64 = leader.parse().ok()?;
        let offset: u64 = offset.parse().ok()?;
        return Some(vec![(leader + offset, None)]);
    }
    match s.split_once('_') {
        None => Some(vec![(s.parse().ok()?, None)]),
        Some((j, t)) => {
            let job: u64 = j.parse().ok()?;
            // Brackets around the whole list, or none (`4_[1` is no id).
            let t = match (t.strip_prefix('['), t.strip_suffix(']')) {
                (Some(open), Some(_)) => open.strip_suffix(']')?,
                (None, None) => t,
                _ => return None,
            };
            let spec = sluice_conf::array::parse_array(t.split('%').next()?).ok()?;
            Some(spec.indices.into_iter().map(|i| (job, Some(i))).collect())
        }
    }
}

/// The program name as the command was run (`argv[0]`: `squeue`, `/usr/bin/squeue`),
/// which glibc's getopt messages start with; set once, by `main`.
static PROGRAM: OnceLock<String> = OnceLock::new();

/// Records how the running command was named on its command line.
pub fn set_program(argv0: &str) {
    let _ = PROGRAM.set(argv0.to_string());
}

/// The program name getopt's messages start with: `argv[0]` as run, or `cmd` when the
/// command was run as `sluice CMD` (or from a test).
pub fn program(cmd: &str) -> String {
    PROGRAM.get().cloned().unwrap_or_else(|| cmd.to_string())
}

/// The command line this command was run with, as Slurm's commands record it for
/// `sacct`'s `SubmitLine`: its words joined by single blanks (no quoting), from the
/// name it was run by (`sbatch`, `/usr/bin/sbatch`; `sbatch` of `sluice sbatch`).
pub fn submit_line() -> String {
    let args: Vec<String> = std::env::args().collect();
    let by_name = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| super::COMMANDS.contains(&n.to_string_lossy().as_ref()));
    args[usize::from(!by_name).min(args.len())..].join(" ")
}

/// This process's umask in Slurm's form (`0022`), read without changing it for good.
pub fn umask_text() -> String {
    // SAFETY: umask can only be read by setting it: the old one is put straight back
    // (the commands run no other thread that creates files meanwhile).
    let old = unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old
    };
    format!("{old:04o}")
}

/// The version the commands report, Slurm's (`-V`, `--version`).
pub const VERSION: &str = "slurm 22.05.8";

/// The Slurm release Sluice answers as ([`VERSION`]'s number): the JSON documents'
/// `meta`, and what each node's agent registers as.
pub const RELEASE: &str = "22.05.8";

/// The version a node's agent registered as, as slurmctld shows it: none for a node
/// whose agent has not registered since the controller started (`agent_start`), as
/// slurmctld learns a node's version, architecture and system only from its
/// registration.
pub fn node_version(agent_start: Option<i64>) -> Option<&'static str> {
    agent_start.map(|_| RELEASE)
}

/// A command line a Slurm command refuses: what it prints and its exit status, as
/// real Slurm 22.05's command prints them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// What goes to standard output (squeue and sprio print their usage there).
    pub stdout: String,
    /// What goes to standard error.
    pub stderr: String,
    /// The exit status.
    pub code: i32,
}

impl Refusal {
    /// getopt's refusal as squeue, sinfo, scancel, scontrol, sprio, sshare and
    /// sacctmgr print it: glibc's words after the program name, then the command's
    /// hint (`Try "squeue --help" for more information`), exit 1.
    pub fn getopt(cmd: &str, e: &GetoptError) -> Refusal {
        Refusal {
            stdout: String::new(),
            stderr: format!(
                "{}: {e}\nTry \"{cmd} --help\" for more information\n",
                program(cmd)
            ),
            code: 1,
        }
    }

    /// getopt's refusal as sacct prints it: glibc's words alone, exit 1.
    pub fn getopt_alone(cmd: &str, e: &GetoptError) -> Refusal {
        Refusal {
            stdout: String::new(),
            stderr: format!("{}: {e}\n", program(cmd)),
            code: 1,
        }
    }

    /// A bad option or value of sbatch, srun or salloc (one their clients check, not
    /// their controller): getopt's refusal in glibc's words after `program`, then the
    /// command's hint; Slurm's own message as `CMD: error: MESSAGE`. Exit 255.
    pub fn job_option(cmd: &str, program: &str, e: &OptionError) -> Refusal {
        if e.fatal {
            return Refusal {
                stdout: String::new(),
                stderr: format!("{cmd}: fatal: {}\n", e.message),
                code: 1,
            };
        }
        let stderr = if e.getopt {
            format!(
                "{program}: {}\nTry \"{cmd} --help\" for more information\n",
                e.message
            )
        } else {
            format!("{cmd}: error: {}\n", e.message)
        };
        Refusal {
            stdout: String::new(),
            stderr,
            code: if e.exit_1 { 1 } else { USAGE_EXIT },
        }
    }

    /// `CMD: error: MESSAGE`, exit 1.
    pub fn error(cmd: &str, message: impl std::fmt::Display) -> Refusal {
        Refusal {
            stdout: String::new(),
            stderr: format!("{cmd}: error: {message}\n"),
            code: 1,
        }
    }

    /// A real Slurm option of the command that Sluice does not implement (beyond the
    /// ones it accepts without effect): refused rather than ignored, exit 1.
    pub fn unsupported<T>(cmd: &str, opt: &Opt<T>) -> Refusal {
        let name = match opt.short {
            Some(c) if opt.long.is_empty() => format!("-{c}"),
            _ => format!("--{}", opt.name),
        };
        Refusal::error(cmd, format!("option {name} is not supported by Sluice"))
    }

    /// This refusal with `stdout` printed too.
    pub fn with_stdout(self, stdout: &str) -> Refusal {
        Refusal {
            stdout: stdout.to_string(),
            ..self
        }
    }

    /// Prints the refusal and exits with its status.
    pub fn exit(&self) -> ! {
        print!("{}", self.stdout);
        eprint!("{}", self.stderr);
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(self.code)
    }
}

#[cfg(test)]
mod tests {
    use sluice_conf::getopt::{Getopt, Opt, Order};

    use super::Refusal;

    #[test]
    fn option_errors_are_glibcs_words_after_the_program_name_then_slurms_hint() {
        const TABLE: &[Opt] = &[
            Opt::flag("noheader", Some('n')),
            Opt::required("user", Some('u')),
            Opt::required("users", None).alias_of("user"),
        ];
        let first_error = |args: &[&str]| {
            let e = Getopt::new(TABLE, args.iter().map(|a| a.to_string()), Order::Permute)
                .find_map(Result::err)
                .unwrap();
            Refusal::getopt("squeue", &e).stderr
        };
        let hint = "Try \"squeue --help\" for more information\n";
        for (args, first) in [
            (&["--bogus=1"][..], "unrecognized option '--bogus=1'"),
            (&["-zq"], "invalid option -- 'z'"),
            (&["-nzq"], "invalid option -- 'z'"),
            (&["-u"], "option requires an argument -- 'u'"),
            (&["--us"], "option '--user' requires an argument"),
            (
                &["--noheader=yes"],
                "option '--noheader' doesn't allow an argument",
            ),
        ] {
            assert_eq!(
                first_error(args),
                format!("squeue: {first}\n{hint}"),
                "{args:?}"
            );
        }
    }

    #[test]
    fn unsupported_options_are_named_by_their_option() {
        let long = Opt::required("nodes", None).alias_of("nodelist");
        assert_eq!(
            Refusal::unsupported("squeue", &long).stderr,
            "squeue: error: option --nodelist is not supported by Sluice\n"
        );
        let letter = Opt::flag("", Some('t'));
        assert_eq!(
            Refusal::unsupported("sacct", &letter),
            Refusal {
                stdout: String::new(),
                stderr: "sacct: error: option -t is not supported by Sluice\n".into(),
                code: 1
            }
        );
    }
}
