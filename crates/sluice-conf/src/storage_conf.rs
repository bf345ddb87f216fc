//! Where the controller keeps its state, as sluice.conf says (slurmdbd.conf's names):
//!
//! - `StorageType=`: `sqlite` (the default: a file in `StateSaveLocation`) or
//!   `postgresql`.
//! - `StorageHost=`, `StoragePort=`, `StorageUser=`, `StorageLoc=` (the database):
//!   the PostgreSQL server, its port (default 5432), the role (default: the
//!   controller's user) and the database (default `sluice`). A host that is a directory
//!   (`/run/postgresql`) means the server's Unix socket there.
//! - `StoragePassFile=`: a file holding the role's password (its first line), which
//!   the controller alone may read: it refuses one that its group or others can.
//! - `StorageUrl=`: instead of those, a libpq connection string
//!   (`postgresql://sluice@db01:5432/sluice?connect_timeout=5`, or `host=… dbname=…`).
//!   A password in it is refused: sluice.conf is read by users' commands too, so the
//!   password goes in `StoragePassFile`.
//!
//! Like the rest of this crate, this says where; it opens nothing.

use std::path::PathBuf;

/// Which engine keeps the state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StorageType {
    /// The embedded SQLite file.
    #[default]
    Sqlite,
    /// A PostgreSQL server.
    Postgresql,
}

/// The `Storage*` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageConf {
    /// `StorageType`.
    pub kind: StorageType,
    /// `StorageHost`.
    pub host: Option<String>,
    /// `StoragePort`.
    pub port: Option<u16>,
    /// `StorageUser`.
    pub user: Option<String>,
    /// `StorageLoc`: the database.
    pub loc: Option<String>,
    /// `StoragePassFile`.
    pub pass_file: Option<PathBuf>,
    /// `StorageUrl`.
    pub url: Option<String>,
}

/// The database's default name (`StorageLoc`).
pub const DEFAULT_STORAGE_LOC: &str = "sluice";
/// PostgreSQL's port.
pub const DEFAULT_STORAGE_PORT: u16 = 5432;

impl StorageConf {
    /// Applies `key=value` if `key` is one of the `Storage*` keys: `None` if it is not
    /// one, else whether its value was taken.
    ///
    /// Errors: an unknown type, a port that is not one, a relative pass file, a
    /// connection string that is not one or holds a password.
    pub fn apply(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        let v = value.trim();
        let k = key.to_ascii_lowercase();
        let set = |slot: &mut Option<String>| {
            *slot = (!v.is_empty()).then(|| v.to_string());
            Ok(())
        };
        Some(match k.as_str() {
            "storagetype" => match v.to_ascii_lowercase().as_str() {
                "sqlite" | "sqlite3" => {
                    self.kind = StorageType::Sqlite;
                    Ok(())
                }
                "postgresql" | "postgres" | "pgsql" => {
                    self.kind = StorageType::Postgresql;
                    Ok(())
                }
                _ => Err(format!(
                    "StorageType: '{v}' is not one Sluice has (sqlite, postgresql)"
                )),
            },
            "storagehost" => set(&mut self.host),
            "storageuser" => set(&mut self.user),
            "storageloc" => set(&mut self.loc),
            "storageport" => match v.parse::<u16>() {
                Ok(p) if p > 0 => {
                    self.port = Some(p);
                    Ok(())
                }
                _ => Err(format!("StoragePort: '{v}' is not a port")),
            },
            "storagepassfile" => {
                if v.starts_with('/') {
                    self.pass_file = Some(PathBuf::from(v));
                    Ok(())
                } else {
                    Err(format!("StoragePassFile: '{v}' is not an absolute path"))
                }
            }
            "storageurl" => check_url(v).map(|()| self.url = Some(v.to_string())),
            "storagepass" => Err(
                "StoragePass: a password does not belong in sluice.conf, which users' \
                 commands read; put it in a file only the controller can read and name \
                 it with StoragePassFile"
                    .into(),
            ),
            _ => return None,
        })
    }
}

/// Refuses a connection string that is not one, or that holds a password.
fn check_url(v: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("StorageUrl: {why}"));
    if let Some(rest) = v
        .strip_prefix("postgresql://")
        .or_else(|| v.strip_prefix("postgres://"))
    {
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            if userinfo.contains(':') {
                return bad(
                    "holds a password, and sluice.conf is read by users' commands: \
                     put the password in StoragePassFile",
                );
            }
        }
        if rest.contains("password=") {
            return bad("holds a password: put it in StoragePassFile");
        }
        Ok(())
    } else if v.contains('=') {
        if v.split_whitespace().any(|w| w.starts_with("password=")) {
            return bad("holds a password: put it in StoragePassFile");
        }
        Ok(())
    } else {
        bad(&format!(
            "'{v}' is not a libpq connection string (postgresql://user@host:port/database)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(pairs: &[(&str, &str)]) -> Result<StorageConf, String> {
        let mut c = StorageConf::default();
        for (k, v) in pairs {
            c.apply(k, v).expect("a Storage key")?;
        }
        Ok(c)
    }

    #[test]
    fn the_storage_keys_name_a_postgresql_server_and_sqlite_is_the_default() {
        assert_eq!(StorageConf::default().kind, StorageType::Sqlite);
        let c = conf(&[
            ("StorageType", "postgresql"),
            ("storagehost", "head01"),
            ("StoragePort", "6543"),
            ("StorageUser", "slurm"),
            ("StorageLoc", "lab"),
            ("StoragePassFile", "/etc/slurm/sluice.dbpass"),
        ])
        .unwrap();
        assert_eq!(c.kind, StorageType::Postgresql);
        assert_eq!(c.host.as_deref(), Some("head01"));
        assert_eq!(c.port, Some(6543));
        assert_eq!(c.user.as_deref(), Some("slurm"));
        assert_eq!(c.loc.as_deref(), Some("lab"));
        assert_eq!(
            c.pass_file.as_deref(),
            Some(std::path::Path::new("/etc/slurm/sluice.dbpass"))
        );
        let c = conf(&[("StorageUrl", "postgresql://slurm@db01/lab")]).unwrap();
        assert_eq!(c.url.as_deref(), Some("postgresql://slurm@db01/lab"));
        assert!(StorageConf::default()
            .apply("PurgeAuditAfter", "1")
            .is_none());
    }

    #[test]
    fn bad_values_and_passwords_in_the_file_are_refused_with_what_to_do() {
        for (k, v, says) in [
            ("StorageType", "mysql", "'mysql' is not one Sluice has"),
            ("StoragePort", "99999", "is not a port"),
            ("StoragePassFile", "pass.txt", "not an absolute path"),
            ("StorageUrl", "db01", "not a libpq connection string"),
            (
                "StorageUrl",
                "postgresql://slurm:secret@db01/lab",
                "put the password in StoragePassFile",
            ),
            ("StorageUrl", "host=db01 password=x", "StoragePassFile"),
            ("StoragePass", "secret", "StoragePassFile"),
        ] {
            let e = conf(&[(k, v)]).unwrap_err();
            assert!(e.contains(says), "{k}={v}: {e}");
        }
    }
}
