//! What the Slurm commands share: finding the controller, Slurm's message shapes, job
//! id arguments and option errors. Durations are `sluice_conf::duration`'s, points in
//! time `sluice_proto::time`'s.

use std::path::PathBuf;

use sluice_conf::getopt::GetoptError;
use sluice_proto::{Client, ClientError, Signer};

/// Exit status of Slurm's clients for option and value errors.
pub const USAGE_EXIT: i32 = 255;

/// The environment variable naming a controller's TCP address (`host:port`, as given
/// to `sluice up --listen`); without it the commands use the Unix socket.
pub const CONTROLLER_ENV: &str = "SLUICE_CONTROLLER";
/// The environment variable naming the cluster key file for TCP (default:
/// `cluster.key` in the state directory).
pub const KEY_FILE_ENV: &str = "SLUICE_KEY_FILE";

/// Where this shell's cluster is: a client for its controller, and who signs requests
/// to its agents over TCP (`srun`).
///
/// In order:
/// 1. `SLUICE_CONTROLLER` (`host:port`): over TCP, signed with the key in
///    `SLUICE_KEY_FILE` (default `cluster.key` in the state directory) — for whoever
///    holds the key.
/// 2. `SLUICE_STATE_DIR`: the controller's Unix socket there (`sluice up`).
/// 3. The state directory of `SLURM_CONF`'s `StateSaveLocation`, or the per-user one,
///    when a controller's socket is there.
/// 4. slurm.conf (`SLURM_CONF`, else `/etc/slurm/slurm.conf`) naming a `SlurmctldHost`:
///    its controller's socket in `StateSaveLocation` when this is that host, else
///    `SlurmctldHost:SlurmctldPort` over TCP, each request vouched for by this host's
///    agent (`AuthInfo`'s `socket=`), which tells the controller this process's uid.
/// 5. The socket of 3, which says that no controller runs.
///
/// Exits with Slurm's connect-failure message when the key for 1 cannot be read, or
/// with the file's error when the slurm.conf of 4 is malformed.
pub fn cluster() -> (Client, Signer) {
    if let Some(addr) = std::env::var(CONTROLLER_ENV).ok().filter(|v| !v.is_empty()) {
        let state = sluice_proto::paths::state_dir();
        let key_file = std::env::var_os(KEY_FILE_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| state.join("cluster.key"));
        return match sluice_proto::auth::read_key(&key_file) {
            Ok(key) => {
                let client = Client::tcp(&addr, key.clone());
                (client, Signer::Key(std::sync::Arc::new(key)))
            }
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
    let local = |socket: PathBuf| (Client::new(&socket), Signer::Vouch(socket));
    let state = sluice_proto::paths::state_dir();
    let socket = sluice_proto::paths::controller_socket(&state);
    let explicit =
        std::env::var_os(sluice_proto::paths::STATE_DIR_ENV).is_some_and(|v| !v.is_empty());
    if explicit || socket.exists() {
        return local(socket);
    }
    let conf_path = crate::daemons::slurm_conf_path(None);
    if conf_path.is_file() {
        let conf = sluice_conf::slurm_conf::read(&conf_path).unwrap_or_else(|e| fail(&me(), e, 1));
        let net =
            sluice_conf::net_conf::NetConf::from_conf(&conf).unwrap_or_else(|e| fail(&me(), e, 1));
        if let Some(addr) = net.controller_addr() {
            let here = sluice_proto::paths::controller_socket(&net.state_save_location);
            if here.exists() {
                return local(here);
            }
            if net.auth == sluice_conf::net_conf::AuthType::Munge {
                fail(
                    &me(),
                    "Unable to contact slurm controller (AuthType=auth/munge is not supported yet)",
                    1,
                )
            }
            let signer = Signer::Vouch(net.auth_socket());
            return (Client::signed(&addr, signer.clone()), signer);
        }
    }
    local(socket)
}

/// A client for the controller of the cluster this shell belongs to (see [`cluster`]).
pub fn controller() -> Client {
    cluster().0
}

/// Who signs this process's requests to agents over TCP (see [`cluster`]): the key's
/// holder, this host's agent, or on the controller's host the controller, which
/// vouches for local callers too.
pub fn agent_signer() -> Signer {
    cluster().1
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

/// A `SLURM_*` style job id argument: `123`, `123_4`, `123_[1-3]`, `123.batch` (step
/// part ignored). Returns (job, task list or none).
pub fn parse_job_arg(s: &str) -> Option<Vec<(u64, Option<u32>)>> {
    let s = s.split('.').next()?;
    match s.split_once('_') {
        None => Some(vec![(s.parse().ok()?, None)]),
        Some((j, t)) => {
            let job: u64 = j.parse().ok()?;
            let t = t.trim_start_matches('[').trim_end_matches(']');
            let spec = sluice_conf::array::parse_array(t.split('%').next()?).ok()?;
            Some(spec.indices.into_iter().map(|i| (job, Some(i))).collect())
        }
    }
}

/// An option error as the query commands (squeue, sinfo, scancel, sacct, sprio,
/// sshare) print it after `CMD: error: `: an unknown option quoted as typed (a short
/// one from its letter on), a missing value named by the option as typed (`'-u'`,
/// `'--user'`), glibc's words for the rest.
pub fn option_message(e: &GetoptError) -> String {
    match e {
        GetoptError::UnrecognizedLong { word, .. } => format!("unrecognized option '{word}'"),
        GetoptError::InvalidShort { rest, .. } => format!("unrecognized option '-{rest}'"),
        GetoptError::LongRequiresArgument { long, .. } => {
            format!("option '--{long}' requires an argument")
        }
        GetoptError::ShortRequiresArgument { letter, .. } => {
            format!("option '-{letter}' requires an argument")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use sluice_conf::getopt::{Getopt, Opt, Order};

    use super::option_message;

    #[test]
    fn query_commands_word_option_errors_as_they_always_have() {
        const TABLE: &[Opt] = &[
            Opt::flag("noheader", Some('n')),
            Opt::required("user", Some('u')),
        ];
        let first_error = |args: &[&str]| {
            Getopt::new(TABLE, args.iter().map(|a| a.to_string()), Order::Permute)
                .find_map(Result::err)
                .map(|e| option_message(&e))
                .unwrap()
        };
        assert_eq!(
            first_error(&["--bogus=1"]),
            "unrecognized option '--bogus=1'"
        );
        assert_eq!(first_error(&["-zq"]), "unrecognized option '-zq'");
        assert_eq!(first_error(&["-nzq"]), "unrecognized option '-zq'");
        assert_eq!(first_error(&["-u"]), "option '-u' requires an argument");
        assert_eq!(
            first_error(&["--us"]),
            "option '--user' requires an argument"
        );
        assert_eq!(
            first_error(&["--noheader=yes"]),
            "option '--noheader' doesn't allow an argument"
        );
    }
}
