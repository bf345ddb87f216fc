//! The daemons of a cluster of several machines, as slurm.conf places them: where the
//! controller is (`SlurmctldHost`, `SlurmctldPort`), where agents listen (`SlurmdPort`,
//! each node's `Port`), where each keeps its state (`StateSaveLocation` for the
//! controller, `SlurmdSpoolDir` for each agent, never shared), how long a silent node is
//! waited for (`SlurmdTimeout`, `ReturnToService`), their pid files, and how callers
//! prove who they are (`AuthType`, `AuthInfo`).
//!
//! Defaults are Slurm's (`slurm.conf(5)`), except `AuthType`: Slurm's default is
//! `auth/munge`; Sluice's is `auth/sluice`, where the node agent on each host vouches
//! for local callers (by `SO_PEERCRED`) with the cluster key, so a cluster needs no
//! other daemon. `AuthInfo` takes `key=FILE` (the cluster key; default `cluster.key`
//! next to slurm.conf) and `socket=PATH` (where local commands ask for a credential:
//! the agent's vouching socket, default [`DEFAULT_VOUCH_SOCKET`], or munged's under
//! `auth/munge`, default [`DEFAULT_MUNGE_SOCKET`]).
//!
//! Like [`crate::log_conf`], this says where and how, and never opens a socket or a
//! file.

use std::path::{Path, PathBuf};

use crate::SlurmConf;

/// `SlurmctldPort`'s default.
pub const DEFAULT_SLURMCTLD_PORT: u16 = 6817;
/// `SlurmdPort`'s default.
pub const DEFAULT_SLURMD_PORT: u16 = 6818;
/// `SlurmdTimeout`'s default, seconds.
pub const DEFAULT_SLURMD_TIMEOUT: i64 = 300;
/// `SlurmctldTimeout`'s default in Sluice, seconds (Slurm's is 120: see COMPATIBILITY.md,
/// `slurmctld-timeout`).
pub const DEFAULT_SLURMCTLD_TIMEOUT: u64 = 10;
/// `StateSaveLocation`'s default.
pub const DEFAULT_STATE_SAVE_LOCATION: &str = "/var/spool/slurmctld";
/// `SlurmdSpoolDir`'s default.
pub const DEFAULT_SLURMD_SPOOL_DIR: &str = "/var/spool/slurmd";
/// `SlurmctldPidFile`'s default.
pub const DEFAULT_SLURMCTLD_PID_FILE: &str = "/var/run/slurmctld.pid";
/// `SlurmdPidFile`'s default.
pub const DEFAULT_SLURMD_PID_FILE: &str = "/var/run/slurmd.pid";
/// Where an agent vouches for local callers under `auth/sluice`, unless `AuthInfo`
/// names another `socket=`.
pub const DEFAULT_VOUCH_SOCKET: &str = "/run/sluice/auth.sock";
/// munged's socket (Debian's `munge` package), unless `AuthInfo` names another.
pub const DEFAULT_MUNGE_SOCKET: &str = "/run/munge/munge.socket.2";
/// The cluster key's file name, next to slurm.conf unless `AuthInfo` names a `key=`.
pub const KEY_FILE_NAME: &str = "cluster.key";

/// How callers prove who they are between hosts (`AuthType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuthType {
    /// `auth/sluice` (Sluice's default): credentials signed with the cluster key; on a
    /// host, its agent signs for local callers, whose uid it reads from its socket.
    #[default]
    Sluice,
    /// `auth/munge`: credentials made and checked by the host's `munged`.
    Munge,
}

impl AuthType {
    /// `AuthType`'s value.
    ///
    /// Errors: a type Sluice does not provide, naming those it does.
    pub fn parse(value: &str) -> Result<AuthType, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auth/sluice" => Ok(AuthType::Sluice),
            "auth/munge" => Ok(AuthType::Munge),
            _ => Err(format!(
                "unknown authentication type '{value}' (auth/sluice or auth/munge)"
            )),
        }
    }

    /// As slurm.conf writes it.
    pub fn name(self) -> &'static str {
        match self {
            AuthType::Sluice => "auth/sluice",
            AuthType::Munge => "auth/munge",
        }
    }
}

/// One `SlurmctldHost=NAME[(ADDR)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerHost {
    /// The host's short name (what `hostname -s` says there).
    pub name: String,
    /// Where to reach it: the address in parentheses, else the name.
    pub addr: String,
}

impl ControllerHost {
    /// `NAME` or `NAME(ADDR)`.
    ///
    /// Errors: an empty name, or unbalanced parentheses.
    pub fn parse(value: &str) -> Result<ControllerHost, String> {
        let v = value.trim();
        let (name, addr) = match v.split_once('(') {
            None => (v, v),
            Some((name, rest)) => match rest.strip_suffix(')') {
                Some(addr) if !addr.is_empty() && !addr.contains(['(', ')']) => (name, addr),
                _ => return Err(format!("expected NAME or NAME(ADDRESS), found '{value}'")),
            },
        };
        if name.is_empty() || name.contains(')') {
            return Err(format!("expected NAME or NAME(ADDRESS), found '{value}'"));
        }
        Ok(ControllerHost {
            name: name.to_string(),
            addr: addr.to_string(),
        })
    }
}

/// The daemons' places and the way callers authenticate (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetConf {
    /// The `SlurmctldHost` lines in order: the first is the primary controller, the
    /// others its backups, which stand by and take over (with `StorageType=postgresql`)
    /// when the active one is gone. Empty: a one-machine cluster (`sluice up`).
    /// `ControlMachine`/`ControlAddr`, Slurm's older keys, count as one.
    pub controllers: Vec<ControllerHost>,
    /// `SlurmctldTimeout`, seconds: within how long a standby controller takes over
    /// from one that is gone (Sluice's default 10; Slurm's is 120).
    pub slurmctld_timeout: u64,
    /// `SlurmctldPort` (the first port of a range).
    pub slurmctld_port: u16,
    /// `SlurmdPort`: where an agent listens unless its node line has a `Port`.
    pub slurmd_port: u16,
    /// `SlurmdTimeout`, seconds: how long a silent node is waited for.
    pub slurmd_timeout: i64,
    /// `ReturnToService` (0, 1 or 2; Slurm's default 0).
    pub return_to_service: u8,
    /// `SlurmdParameters=config_overrides`: the resources an agent finds on its host are
    /// not checked against the node's line (Slurm's `CTL_CONF_OR`).
    pub config_overrides: bool,
    /// `StateSaveLocation`: the controller's state directory (its host's own).
    pub state_save_location: PathBuf,
    /// `SlurmdSpoolDir` as written: each agent's own directory, `%n` and `%h` expanded
    /// by [`NetConf::spool_dir`].
    pub slurmd_spool_dir: String,
    /// `SlurmctldPidFile`.
    pub slurmctld_pid_file: PathBuf,
    /// `SlurmdPidFile` as written (`%n`, `%h` expanded by [`NetConf::pid_file`]).
    pub slurmd_pid_file: String,
    /// `AuthType`.
    pub auth: AuthType,
    /// `AuthInfo`'s `socket=`, if given.
    pub auth_socket: Option<PathBuf>,
    /// `AuthInfo`'s `key=`, if given.
    pub key_file: Option<PathBuf>,
    /// `AuthAltTypes=auth/jwt` with its `AuthAltParameters`: tokens the controller
    /// makes (`scontrol token`) and admits on its TCP listener. `None`: no tokens.
    /// Boxed: most clusters have none, and commands carry this struct around.
    pub jwt: Option<Box<JwtConf>>,
}

/// `AuthAltTypes=auth/jwt` and its `AuthAltParameters` (Slurm's auth/jwt plugin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtConf {
    /// `jwt_key=FILE`: the HS256 key, readable by the controller's user only.
    pub key: PathBuf,
    /// `max_token_lifespan=SECONDS`: the longest lifespan a user other than root or
    /// the SlurmUser may ask for.
    pub max_lifespan: Option<i64>,
    /// `disable_token_creation`: only root and the SlurmUser may ask for tokens.
    pub disable_creation: bool,
}

impl Default for NetConf {
    fn default() -> Self {
        NetConf {
            controllers: Vec::new(),
            slurmctld_timeout: DEFAULT_SLURMCTLD_TIMEOUT,
            slurmctld_port: DEFAULT_SLURMCTLD_PORT,
            slurmd_port: DEFAULT_SLURMD_PORT,
            slurmd_timeout: DEFAULT_SLURMD_TIMEOUT,
            return_to_service: 0,
            config_overrides: false,
            state_save_location: PathBuf::from(DEFAULT_STATE_SAVE_LOCATION),
            slurmd_spool_dir: DEFAULT_SLURMD_SPOOL_DIR.to_string(),
            slurmctld_pid_file: PathBuf::from(DEFAULT_SLURMCTLD_PID_FILE),
            slurmd_pid_file: DEFAULT_SLURMD_PID_FILE.to_string(),
            auth: AuthType::default(),
            auth_socket: None,
            key_file: None,
            jwt: None,
        }
    }
}

/// A port, or the first of a range `A-B` (`SlurmctldPort=6817-6818`).
///
/// Errors: anything else.
pub fn parse_port(value: &str) -> Result<u16, String> {
    let first = value.split('-').next().unwrap_or("").trim();
    first
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("expected a port number, found '{value}'"))
}

/// `ReturnToService`'s value.
///
/// Errors: anything but 0, 1 or 2.
pub fn parse_return_to_service(value: &str) -> Result<u8, String> {
    match value.trim() {
        "0" => Ok(0),
        "1" => Ok(1),
        "2" => Ok(2),
        _ => Err(format!("expected 0, 1 or 2, found '{value}'")),
    }
}

/// `AuthInfo`'s options: (`socket=`, `key=`). Others (munge's `ttl=`, `cred_expire=`)
/// are accepted and ignored.
///
/// Errors: an empty `socket=` or `key=`.
pub fn parse_auth_info(value: &str) -> Result<(Option<PathBuf>, Option<PathBuf>), String> {
    let mut socket = None;
    let mut key = None;
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        let slot = match k.trim().to_ascii_lowercase().as_str() {
            "socket" => &mut socket,
            "key" => &mut key,
            _ => continue,
        };
        if v.trim().is_empty() {
            return Err(format!("AuthInfo: '{k}=' needs a path"));
        }
        *slot = Some(PathBuf::from(v.trim()));
    }
    Ok((socket, key))
}

/// `AuthAltTypes`: whether it names `auth/jwt` (the only alternative type).
///
/// Errors: any other type.
pub fn parse_auth_alt_types(value: &str) -> Result<bool, String> {
    let mut jwt = false;
    for t in value.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if !t.eq_ignore_ascii_case("auth/jwt") {
            return Err(format!(
                "unknown alternative authentication type '{t}' (auth/jwt)"
            ));
        }
        jwt = true;
    }
    Ok(jwt)
}

/// `AuthAltParameters`: `jwt_key=FILE` (an absolute path), `max_token_lifespan=N`,
/// `disable_token_creation`; others (`jwks=`, `userclaimfield=`) are accepted and
/// ignored. The key is `None` when not given.
///
/// Errors: an empty or relative `jwt_key=`, a lifespan that is not a positive number.
pub fn parse_auth_alt_parameters(value: &str) -> Result<Option<JwtConf>, String> {
    let mut key = None;
    let mut max_lifespan = None;
    let mut disable_creation = false;
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        match k.trim().to_ascii_lowercase().as_str() {
            "jwt_key" => {
                let path = PathBuf::from(v.trim());
                if !path.is_absolute() {
                    return Err(format!(
                        "AuthAltParameters: jwt_key= needs an absolute path, found '{v}'"
                    ));
                }
                key = Some(path);
            }
            "max_token_lifespan" => match v.trim().parse::<i64>() {
                Ok(n) if n > 0 => max_lifespan = Some(n),
                _ => {
                    return Err(format!(
                        "AuthAltParameters: invalid max_token_lifespan '{v}'"
                    ))
                }
            },
            "disable_token_creation" => disable_creation = true,
            _ => {}
        }
    }
    Ok(key.map(|key| JwtConf {
        key,
        max_lifespan,
        disable_creation,
    }))
}

/// `%n` and `%h` in `pattern` replaced by the node's and the host's names, as slurmd
/// expands `SlurmdSpoolDir`, `SlurmdPidFile` and `SlurmdLogFile`.
pub fn expand_node(pattern: &str, host: &str, node: &str) -> String {
    pattern.replace("%n", node).replace("%h", host)
}

impl NetConf {
    /// The settings of `conf` (defaults for those it does not set).
    ///
    /// Errors: a malformed value (the parser refuses them first, with file and line,
    /// so a `SlurmConf` read from a file never gets here with one).
    pub fn from_conf(conf: &SlurmConf) -> Result<NetConf, String> {
        let mut n = NetConf::default();
        let with = |key: &str, m: String| format!("{key}: {m}");
        for host in &conf.controllers {
            n.controllers
                .push(ControllerHost::parse(host).map_err(|m| with("SlurmctldHost", m))?);
        }
        if n.controllers.is_empty() {
            if let Some(name) = conf.get("ControlMachine") {
                let addr = conf.get("ControlAddr").unwrap_or(name);
                n.controllers.push(ControllerHost {
                    name: name.to_string(),
                    addr: addr.to_string(),
                });
            }
        }
        if let Some(v) = conf.get("SlurmctldPort") {
            n.slurmctld_port = parse_port(v).map_err(|m| with("SlurmctldPort", m))?;
        }
        if let Some(v) = conf.get("SlurmdPort") {
            n.slurmd_port = parse_port(v).map_err(|m| with("SlurmdPort", m))?;
        }
        if let Some(v) = conf.get("SlurmctldTimeout") {
            n.slurmctld_timeout = v.trim().parse().ok().filter(|t| *t > 0).ok_or_else(|| {
                with(
                    "SlurmctldTimeout",
                    format!("expected a positive integer, found '{v}'"),
                )
            })?;
        }
        if let Some(v) = conf.get("SlurmdTimeout") {
            n.slurmd_timeout = v
                .trim()
                .parse()
                .map_err(|_| with("SlurmdTimeout", format!("expected an integer, found '{v}'")))?;
        }
        if let Some(v) = conf.get("ReturnToService") {
            n.return_to_service =
                parse_return_to_service(v).map_err(|m| with("ReturnToService", m))?;
        }
        if let Some(v) = conf.get("SlurmdParameters") {
            n.config_overrides = v
                .split(',')
                .any(|p| p.trim().eq_ignore_ascii_case("config_overrides"));
        }
        if let Some(v) = conf.get("StateSaveLocation").filter(|v| !v.is_empty()) {
            n.state_save_location = PathBuf::from(v);
        }
        if let Some(v) = conf.get("SlurmdSpoolDir").filter(|v| !v.is_empty()) {
            n.slurmd_spool_dir = v.to_string();
        }
        if let Some(v) = conf.get("SlurmctldPidFile").filter(|v| !v.is_empty()) {
            n.slurmctld_pid_file = PathBuf::from(v);
        }
        if let Some(v) = conf.get("SlurmdPidFile").filter(|v| !v.is_empty()) {
            n.slurmd_pid_file = v.to_string();
        }
        if let Some(v) = conf.get("AuthType") {
            n.auth = AuthType::parse(v).map_err(|m| with("AuthType", m))?;
        }
        if let Some(v) = conf.get("AuthInfo") {
            let (socket, key) = parse_auth_info(v)?;
            n.auth_socket = socket;
            n.key_file = key;
        }
        let jwt = match conf.get("AuthAltTypes") {
            Some(v) => parse_auth_alt_types(v).map_err(|m| with("AuthAltTypes", m))?,
            None => false,
        };
        if jwt {
            let params = conf.get("AuthAltParameters").unwrap_or("");
            let jwt = parse_auth_alt_parameters(params)?;
            n.jwt = Some(Box::new(jwt.ok_or_else(|| {
                "AuthAltTypes=auth/jwt needs AuthAltParameters=jwt_key=/path/to/key".to_string()
            })?));
        }
        Ok(n)
    }

    /// The primary controller, if the file names one.
    pub fn controller(&self) -> Option<&ControllerHost> {
        self.controllers.first()
    }

    /// `ADDR:PORT` of the primary controller.
    pub fn controller_addr(&self) -> Option<String> {
        self.controller()
            .map(|c| format!("{}:{}", c.addr, self.slurmctld_port))
    }

    /// `ADDR:PORT` of every controller, the primary first (where agents and commands
    /// look for the active one, in this order).
    pub fn controller_addrs(&self) -> Vec<String> {
        self.controllers
            .iter()
            .map(|c| format!("{}:{}", c.addr, self.slurmctld_port))
            .collect()
    }

    /// The place of host `host` among the controllers (0: the primary), if listed; a
    /// `localhost` line is any host's.
    pub fn controller_index(&self, host: &str) -> Option<usize> {
        self.controllers
            .iter()
            .position(|c| c.name == host || c.name == "localhost")
    }

    /// Node `node`'s agent's own directory on host `host`.
    pub fn spool_dir(&self, host: &str, node: &str) -> PathBuf {
        PathBuf::from(expand_node(&self.slurmd_spool_dir, host, node))
    }

    /// Node `node`'s agent's pid file on host `host`.
    pub fn pid_file(&self, host: &str, node: &str) -> PathBuf {
        PathBuf::from(expand_node(&self.slurmd_pid_file, host, node))
    }

    /// Where local callers ask for credentials: `AuthInfo`'s `socket=`, else the
    /// default of the `AuthType`.
    pub fn auth_socket(&self) -> PathBuf {
        self.auth_socket.clone().unwrap_or_else(|| {
            PathBuf::from(match self.auth {
                AuthType::Sluice => DEFAULT_VOUCH_SOCKET,
                AuthType::Munge => DEFAULT_MUNGE_SOCKET,
            })
        })
    }

    /// The cluster key's file: `AuthInfo`'s `key=` (relative to slurm.conf's directory),
    /// else `cluster.key` next to `slurm_conf`.
    pub fn key_file(&self, slurm_conf: &Path) -> PathBuf {
        let dir = slurm_conf.parent().unwrap_or(Path::new("."));
        match &self.key_file {
            Some(k) if k.is_absolute() => k.clone(),
            Some(k) => dir.join(k),
            None => dir.join(KEY_FILE_NAME),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(text: &str) -> SlurmConf {
        crate::slurm_conf::parse_str(
            &format!("ClusterName=c\nNodeName=n1 CPUs=1\n{text}"),
            Path::new("/etc/slurm/slurm.conf"),
        )
        .unwrap()
    }

    #[test]
    fn defaults_are_slurms_but_for_the_auth_type() {
        let n = NetConf::from_conf(&conf("")).unwrap();
        assert_eq!(n, NetConf::default());
        assert_eq!(n.controller_addr(), None);
        assert_eq!(n.slurmctld_port, 6817);
        assert_eq!(n.slurmd_port, 6818);
        assert_eq!(n.slurmd_timeout, 300);
        assert_eq!(n.return_to_service, 0);
        assert!(!n.config_overrides);
        assert_eq!(n.state_save_location, Path::new("/var/spool/slurmctld"));
        assert_eq!(n.spool_dir("h", "n1"), Path::new("/var/spool/slurmd"));
        assert_eq!(n.auth, AuthType::Sluice);
        assert_eq!(n.auth_socket(), Path::new("/run/sluice/auth.sock"));
        assert_eq!(
            n.key_file(Path::new("/etc/slurm/slurm.conf")),
            Path::new("/etc/slurm/cluster.key")
        );
    }

    #[test]
    fn the_seeds_controller_and_every_setting_as_written() {
        let n = NetConf::from_conf(&conf(
            "SlurmctldHost=head01(10.0.0.1)\nSlurmctldHost=head02\nSlurmctldPort=7817-7818\n\
             SlurmdPort=7818\nSlurmdTimeout=30\nReturnToService=2\n\
             SlurmdParameters=shutdown_on_reboot,config_overrides\n\
             StateSaveLocation=/srv/ctld\nSlurmdSpoolDir=/var/spool/slurmd.%n\n\
             SlurmdPidFile=/run/slurmd.%n.pid\nAuthType=auth/munge\n\
             AuthInfo=socket=/run/m.sock,ttl=60,key=keys/c.key",
        ))
        .unwrap();
        assert_eq!(
            n.controllers,
            [
                ControllerHost {
                    name: "head01".into(),
                    addr: "10.0.0.1".into()
                },
                ControllerHost {
                    name: "head02".into(),
                    addr: "head02".into()
                }
            ]
        );
        assert_eq!(n.controller_addr().as_deref(), Some("10.0.0.1:7817"));
        assert_eq!(n.controller_addrs(), ["10.0.0.1:7817", "head02:7817"]);
        assert_eq!(n.controller_index("head02"), Some(1));
        assert_eq!(n.controller_index("node01"), None);
        assert_eq!(n.slurmctld_timeout, 10, "Sluice's default");
        assert_eq!(n.slurmd_port, 7818);
        assert_eq!(n.slurmd_timeout, 30);
        assert_eq!(n.return_to_service, 2);
        assert!(n.config_overrides);
        assert_eq!(n.state_save_location, Path::new("/srv/ctld"));
        assert_eq!(
            n.spool_dir("node01", "n1"),
            Path::new("/var/spool/slurmd.n1")
        );
        assert_eq!(n.pid_file("node01", "n1"), Path::new("/run/slurmd.n1.pid"));
        assert_eq!(n.auth, AuthType::Munge);
        assert_eq!(n.auth_socket(), Path::new("/run/m.sock"));
        assert_eq!(
            n.key_file(Path::new("/etc/slurm/slurm.conf")),
            Path::new("/etc/slurm/keys/c.key")
        );
        // The older keys.
        let old = NetConf::from_conf(&conf("ControlMachine=head01\nControlAddr=10.0.0.9")).unwrap();
        assert_eq!(old.controller_addr().as_deref(), Some("10.0.0.9:6817"));
    }

    #[test]
    fn malformed_values_are_refused_with_file_and_line() {
        for (line, want) in [
            (
                "SlurmctldPort=http",
                "SlurmctldPort: expected a port number, found 'http'",
            ),
            (
                "SlurmdPort=0",
                "SlurmdPort: expected a port number, found '0'",
            ),
            (
                "ReturnToService=3",
                "ReturnToService: expected 0, 1 or 2, found '3'",
            ),
            (
                "AuthType=auth/none",
                "AuthType: unknown authentication type 'auth/none' (auth/sluice or auth/munge)",
            ),
            (
                "SlurmctldHost=head01(",
                "SlurmctldHost: expected NAME or NAME(ADDRESS), found 'head01('",
            ),
            (
                "AuthInfo=socket=",
                "AuthInfo: AuthInfo: 'socket=' needs a path",
            ),
            (
                "AuthAltTypes=auth/oidc",
                "AuthAltTypes: unknown alternative authentication type 'auth/oidc' (auth/jwt)",
            ),
            (
                "AuthAltParameters=jwt_key=jwt.key",
                "AuthAltParameters: AuthAltParameters: jwt_key= needs an absolute path, found 'jwt.key'",
            ),
            (
                "AuthAltParameters=jwt_key=/k,max_token_lifespan=0",
                "AuthAltParameters: AuthAltParameters: invalid max_token_lifespan '0'",
            ),
        ] {
            let e = crate::slurm_conf::parse_str(
                &format!("ClusterName=c\n{line}\nNodeName=n1 CPUs=1\n"),
                Path::new("/etc/slurm/slurm.conf"),
            )
            .unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("/etc/slurm/slurm.conf:2: {want}"),
                "{line}"
            );
        }
        assert_eq!(
            expand_node("/var/log/slurmd.%h.%n", "node01", "n1"),
            "/var/log/slurmd.node01.n1"
        );
    }

    #[test]
    fn tokens_need_auth_jwt_and_a_key() {
        let n = NetConf::from_conf(&conf(
            "AuthAltTypes=auth/jwt\n\
             AuthAltParameters=jwt_key=/etc/slurm/jwt.key,max_token_lifespan=600,disable_token_creation,jwks=/x",
        ))
        .unwrap();
        assert_eq!(
            n.jwt,
            Some(Box::new(JwtConf {
                key: PathBuf::from("/etc/slurm/jwt.key"),
                max_lifespan: Some(600),
                disable_creation: true,
            }))
        );
        // Parameters alone turn nothing on; the type alone lacks its key.
        let n = NetConf::from_conf(&conf("AuthAltParameters=jwt_key=/etc/slurm/jwt.key")).unwrap();
        assert_eq!(n.jwt, None);
        let e = crate::slurm_conf::parse_str(
            "ClusterName=c\nNodeName=n1 CPUs=1\nAuthAltTypes=auth/jwt\n",
            Path::new("/etc/slurm/slurm.conf"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "/etc/slurm/slurm.conf: AuthAltTypes=auth/jwt needs AuthAltParameters=jwt_key=/path/to/key"
        );
    }
}
