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

/// A PostgreSQL server, database and role, with the password if one is needed.
#[derive(Clone, Debug)]
pub struct PgTarget {
    pub(crate) config: postgres::Config,
}

impl PgTarget {
    /// From a libpq connection string: a URL (`postgresql://user@host:port/db`) or
    /// `key=value` pairs (`host=/run/postgresql dbname=slurm`).
    ///
    /// Errors: the string is not one.
    pub fn from_url(url: &str) -> Result<PgTarget, String> {
        postgres::Config::from_str(url)
            .map(|config| PgTarget { config })
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
        PgTarget { config }
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
