//! Where the store keeps its state: a SQLite file (the embedded default) or a
//! PostgreSQL database, and how either is named in messages.

use std::path::PathBuf;
use std::str::FromStr;

/// The database a [`crate::Store`] opens.
#[derive(Clone, Debug)]
pub enum Location {
    /// A SQLite file (created if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database (which must exist; its tables are created).
    Postgres(Box<PgTarget>),
}

/// A PostgreSQL server, database and role, with the password if one is needed, and
/// the cluster whose tables are meant: several clusters may share one database, each
/// in a schema of its own ([`crate::clusters`]).
#[derive(Clone, Debug)]
pub struct PgTarget {
    pub(crate) config: postgres::Config,
    pub(crate) member: Member,
}

/// Which cluster a controller (or a tool) works for on a shared database, and where
/// its controllers are: what the registry of clusters keeps ([`crate::clusters`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// `ClusterName`.
    pub cluster: String,
    /// This host's short name (`hostname -s`).
    pub host: String,
    /// The names of the hosts `SlurmctldHost` lists (empty: one controller).
    pub listed: Vec<String>,
    /// Where the controller listens for TCP (`ControlHost`), if it does.
    pub control_host: String,
    /// Its TCP port (`ControlPort`); 0 without one.
    pub control_port: u16,
}

impl Default for Member {
    fn default() -> Member {
        Member {
            cluster: DEFAULT_CLUSTER.into(),
            host: String::new(),
            listed: Vec::new(),
            control_host: String::new(),
            control_port: 0,
        }
    }
}

/// The cluster a target means unless told (Sluice's `ClusterName` when slurm.conf has
/// none).
pub const DEFAULT_CLUSTER: &str = "cluster";

impl PgTarget {
    /// From a libpq connection string: a URL (`postgresql://user@host:port/db`) or
    /// `key=value` pairs (`host=/run/postgresql dbname=slurm`).
    ///
    /// Errors: the string is not one.
    pub fn from_url(url: &str) -> Result<PgTarget, String> {
        postgres::Config::from_str(url)
            .map(|config| PgTarget {
                config,
                member: Member::default(),
            })
            .map_err(|e| format!("not a PostgreSQL connection string: {e}"))
    }

    /// From its parts, as slurmdbd.conf names them: `StorageHost` (a name, an address,
    /// or a directory holding the server's Unix socket), `StoragePort`, `StorageUser`,
    /// `StorageLoc` (the database) and the password (read from `StoragePassFile`).
    pub fn from_parts(
        host: &str,
        port: Option<u16>,
        user: &str,
        database: &str,
        password: Option<&str>,
    ) -> PgTarget {
        let mut config = postgres::Config::new();
        config.host(host).user(user).dbname(database);
        if let Some(p) = port {
            config.port(p);
        }
        if let Some(p) = password {
            config.password(p);
        }
        PgTarget {
            config,
            member: Member::default(),
        }
    }

    /// The target for cluster `member.cluster`, its controller described by `member`.
    pub fn for_member(mut self, member: Member) -> PgTarget {
        self.member = member;
        self
    }

    /// The cluster whose tables this target means.
    pub fn cluster(&self) -> &str {
        &self.member.cluster
    }

    /// The target with `password`, unless its connection string set one.
    pub fn with_password(mut self, password: &str) -> PgTarget {
        if self.config.get_password().is_none() {
            self.config.password(password);
        }
        self
    }

    /// Whether a password is set (from the connection string or a pass file).
    pub fn has_password(&self) -> bool {
        self.config.get_password().is_some()
    }

    /// `user@host:port/database`, for messages (never the password).
    pub fn describe(&self) -> String {
        let c = &self.config;
        let host = match c.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => h.clone(),
            Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => "localhost".into(),
        };
        let port = c.get_ports().first().copied().unwrap_or(5432);
        format!(
            "{}@{host}:{port}/{}",
            c.get_user().unwrap_or("?"),
            c.get_dbname().or(c.get_user()).unwrap_or("?")
        )
    }
}

impl Location {
    /// The location for messages: the file, or the PostgreSQL server and database.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(t) => format!("PostgreSQL {}", t.describe()),
        }
    }
}
