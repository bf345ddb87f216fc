//! Which database the controller opens: sluice.conf's `Storage*` settings
//! ([`sluice_conf::storage_conf`]) made into a [`Location`], the password read from
//! `StoragePassFile` — a file only the controller's user may read.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use sluice_conf::storage_conf::{StorageConf, StorageType, DEFAULT_STORAGE_LOC};
use sluice_store::{Location, Member, PgTarget};

/// The SQLite file's name in the state directory.
pub const SQLITE_FILE: &str = "sluice.db";

/// Where the state is: `state_dir`'s SQLite file, or the PostgreSQL database `conf`
/// names.
///
/// Errors, saying what to do: a connection string that is not one, a pass file that
/// cannot be read or that others can read.
pub fn location(conf: &StorageConf, state_dir: &Path) -> Result<Location, String> {
    if conf.kind == StorageType::Sqlite {
        return Ok(Location::Sqlite(state_dir.join(SQLITE_FILE)));
    }
    let password = conf.pass_file.as_deref().map(read_pass_file).transpose()?;
    let target = match &conf.url {
        Some(url) => PgTarget::from_url(url).map_err(|e| format!("StorageUrl: {e}"))?,
        None => {
            let user = match &conf.user {
                Some(u) => u.clone(),
                None => nix::unistd::User::from_uid(nix::unistd::getuid())
                    .ok()
                    .flatten()
                    .map(|u| u.name)
                    .unwrap_or_else(|| "slurm".into()),
            };
            PgTarget::from_parts(
                conf.host.as_deref().unwrap_or("localhost"),
                conf.port,
                &user,
                conf.loc.as_deref().unwrap_or(DEFAULT_STORAGE_LOC),
                None,
            )
        }
    };
    Ok(Location::Postgres(Box::new(match password {
        Some(p) => target.with_password(&p),
        None => target,
    })))
}

/// `location` for `conf`'s cluster: a PostgreSQL database may hold several clusters'
/// tables, each controller working in its own `ClusterName`'s and registered with
/// where it runs (this host, the hosts `SlurmctldHost` lists, the TCP address it
/// listens on), so that a second live controller of the cluster is told apart from a
/// backup ([`sluice_store::clusters`]).
pub fn for_cluster(
    location: Location,
    conf: &crate::config::ClusterConfig,
    listen: Option<std::net::SocketAddr>,
) -> Location {
    match location {
        Location::Postgres(t) => Location::Postgres(Box::new(
            t.for_member(Member {
                cluster: conf.cluster_name.clone(),
                host: crate::config::this_host(),
                listed: conf
                    .net
                    .controllers
                    .iter()
                    .map(|h| h.name.clone())
                    .collect(),
                control_host: listen.map(|a| a.ip().to_string()).unwrap_or_default(),
                control_port: listen.map_or(0, |a| a.port()),
            }),
        )),
        sqlite => sqlite,
    }
}

/// The password in `path` (its first line).
///
/// Errors: the file cannot be read, or its group or others may read or write it.
pub fn read_pass_file(path: &Path) -> Result<String, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("StoragePassFile {}: {e}", path.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "StoragePassFile {}: its mode is {mode:04o}, so others than the controller's \
             user can read it; chmod 600 it (owned by the controller's user)",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("StoragePassFile {}: {e}", path.display()))?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_is_a_file_in_the_state_directory_and_postgresql_takes_its_parts() {
        let dir = std::env::temp_dir().join(format!("sluice-storage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let Location::Sqlite(p) = location(&StorageConf::default(), &dir).unwrap() else {
            panic!("SQLite by default")
        };
        assert_eq!(p, dir.join("sluice.db"));
        let pass = dir.join("dbpass");
        std::fs::write(&pass, "s3cret\n").unwrap();
        std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o644)).unwrap();
        let conf = StorageConf {
            kind: StorageType::Postgresql,
            host: Some("head01".into()),
            port: Some(6543),
            user: Some("slurm".into()),
            loc: None,
            pass_file: Some(pass.clone()),
            url: None,
        };
        let e = location(&conf, &dir).unwrap_err();
        assert!(e.contains("mode is 0644") && e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let Location::Postgres(t) = location(&conf, &dir).unwrap() else {
            panic!("PostgreSQL")
        };
        assert_eq!(t.describe(), "slurm@head01:6543/sluice");
        assert!(t.has_password());
        let conf = StorageConf {
            url: Some("postgresql://lab@db01/acct".into()),
            ..conf
        };
        let Location::Postgres(t) = location(&conf, &dir).unwrap() else {
            panic!("PostgreSQL")
        };
        assert_eq!(t.describe(), "lab@db01:5432/acct");
        assert!(t.has_password(), "the pass file's password");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
