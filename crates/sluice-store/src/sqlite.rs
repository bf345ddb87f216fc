//! The SQLite engine: the embedded default. One file in WAL mode, `synchronous=FULL`,
//! each connection's page cache bounded ([`crate::CACHE_KIB`]); the schema's versions
//! are [`crate::schema`]'s.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::backend::Batch;
use crate::{audit, jobs, schema, AccountRow, AuditRecord, JobKeys, KeysOf, StoreError};

/// SQLite's error, naming the file.
pub(crate) fn error(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// The writer's connection to `path`, the database created or upgraded, `first_job_id`
/// applied if it holds no job yet.
pub(crate) fn open(
    path: &Path,
    first_job_id: u64,
    keys_of: KeysOf,
) -> Result<Connection, StoreError> {
    let e = error(path);
    let mut conn = Connection::open(path).map_err(&e)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(&e)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(&e)?;
    conn.pragma_update(None, "cache_size", -crate::CACHE_KIB)
        .map_err(&e)?;
    schema::migrate(&mut conn, keys_of).map_err(&e)?;
    conn.execute_batch(audit::SCHEMA).map_err(&e)?;
    let fresh: bool = conn
        .query_row("SELECT COUNT(*) = 0 FROM jobs", [], |r| r.get(0))
        .map_err(&e)?;
    if fresh {
        conn.execute(
            "UPDATE meta SET value = max(value, ?1) WHERE key = 'next_job_id'",
            params![first_job_id as i64],
        )
        .map_err(&e)?;
    }
    Ok(conn)
}

/// A read-only connection to the database, its page cache bounded.
pub(crate) fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.pragma_update(None, "cache_size", -crate::CACHE_KIB)?;
    Ok(conn)
}

/// A group-commit transaction on SQLite.
pub(crate) struct SqliteBatch<'a, 'c> {
    pub(crate) tx: &'a Transaction<'c>,
    pub(crate) path: &'a Path,
}

impl SqliteBatch<'_, '_> {
    fn run(&self, sql: &str, args: impl rusqlite::Params) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(sql)
            .and_then(|mut s| s.execute(args))
            .map(drop)
            .map_err(error(self.path))
    }
}

impl Batch for SqliteBatch<'_, '_> {
    fn next_job_id(&mut self) -> Result<i64, StoreError> {
        self.tx
            .query_row(
                "SELECT value FROM meta WHERE key = 'next_job_id'",
                [],
                |r| r.get(0),
            )
            .map_err(error(self.path))
    }

    fn set_next_job_id(&mut self, next: i64) -> Result<(), StoreError> {
        self.run(
            "UPDATE meta SET value = ?1 WHERE key = 'next_job_id'",
            params![next],
        )
    }

    fn insert_job(&mut self, id: u64, keys: &JobKeys, record: &str) -> Result<(), StoreError> {
        jobs::insert(self.tx, id, keys, record).map_err(error(self.path))
    }

    fn put_job(&mut self, id: u64, keys: &JobKeys, record: &str) -> Result<(), StoreError> {
        jobs::put(self.tx, id, keys, record).map_err(error(self.path))
    }

    fn put_step(&mut self, id: u64, step: u64, record: &str) -> Result<(), StoreError> {
        self.run(
            "INSERT OR REPLACE INTO steps (job_id, step_id, record) VALUES (?1, ?2, ?3)",
            params![id as i64, step as i64, record],
        )
    }

    fn put_script(&mut self, id: u64, script: &str, environment: &str) -> Result<(), StoreError> {
        self.run(
            "INSERT OR REPLACE INTO job_scripts (id, script, environment) VALUES (?1, ?2, ?3)",
            params![id as i64, script, environment],
        )
    }

    fn delete_job(&mut self, id: u64) -> Result<(), StoreError> {
        let id = id as i64;
        self.run("DELETE FROM steps WHERE job_id = ?1", params![id])?;
        self.run("DELETE FROM job_scripts WHERE id = ?1", params![id])?;
        self.run("DELETE FROM jobs WHERE id = ?1", params![id])
    }

    fn put_run(&mut self, id: u64, run: u32, record: &str) -> Result<(), StoreError> {
        self.run(
            "INSERT OR REPLACE INTO runs (job_id, run, record) VALUES (?1, ?2, ?3)",
            params![id as i64, i64::from(run), record],
        )
    }

    fn put_node(&mut self, name: &str, record: Option<&str>) -> Result<(), StoreError> {
        match record {
            Some(r) => self.run(
                "INSERT OR REPLACE INTO nodes (name, record) VALUES (?1, ?2)",
                params![name, r],
            ),
            None => self.run("DELETE FROM nodes WHERE name = ?1", params![name]),
        }
    }

    fn put_account(&mut self, row: &AccountRow) -> Result<(), StoreError> {
        match &row.record {
            Some(r) => self.run(
                "INSERT OR REPLACE INTO accounts (kind, key, record) VALUES (?1, ?2, ?3)",
                params![row.kind, row.key, r],
            ),
            None => self.run(
                "DELETE FROM accounts WHERE kind = ?1 AND key = ?2",
                params![row.kind, row.key],
            ),
        }
    }

    fn put_reservation(&mut self, name: &str, record: Option<&str>) -> Result<(), StoreError> {
        match record {
            Some(r) => self.run(
                "INSERT OR REPLACE INTO reservations (name, record) VALUES (?1, ?2)",
                params![name, r],
            ),
            None => self.run("DELETE FROM reservations WHERE name = ?1", params![name]),
        }
    }

    fn mark_stopped(&mut self, stopped: bool) -> Result<(), StoreError> {
        self.run(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('stopped_with_agents', ?1)",
            params![i64::from(stopped)],
        )
    }

    fn audit(&mut self, records: &[AuditRecord]) -> Result<(), StoreError> {
        audit::write(self.tx, records).map_err(error(self.path))
    }

    fn purge_audit(&mut self, before: i64, limit: u64) -> Result<u64, StoreError> {
        audit::purge(self.tx, before, limit).map_err(error(self.path))
    }
}

/// Everything the database holds (see [`crate::Snapshot`]).
pub(crate) fn read_all(conn: &Connection) -> rusqlite::Result<crate::Snapshot> {
    use crate::{Row, Snapshot};
    let rows = |sql: &str| -> rusqlite::Result<Vec<Row>> {
        let mut stmt = conn.prepare(sql)?;
        let v = stmt
            .query_map([], |r| {
                Ok(Row {
                    id: r.get::<_, i64>(0)? as u64,
                    step: if r.as_ref().column_count() > 2 {
                        Some(r.get::<_, i64>(1)? as u32)
                    } else {
                        None
                    },
                    record: r.get(r.as_ref().column_count() - 1)?,
                })
            })?
            .collect();
        v
    };
    let pairs = |sql: &str| -> rusqlite::Result<Vec<(String, String)>> {
        let mut stmt = conn.prepare(sql)?;
        let v = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
            .collect();
        v
    };
    let mut stmt = conn.prepare("SELECT kind, key, record FROM accounts ORDER BY kind, key")?;
    let accounts = stmt
        .query_map([], |r| {
            Ok(AccountRow {
                kind: r.get(0)?,
                key: r.get(1)?,
                record: Some(r.get(2)?),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let meta = |key: &str| -> rusqlite::Result<Option<i64>> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
    };
    Ok(Snapshot {
        jobs: rows("SELECT id, record FROM jobs ORDER BY id")?,
        steps: rows("SELECT job_id, step_id, record FROM steps ORDER BY job_id, step_id")?,
        next_job_id: meta("next_job_id")?.unwrap_or(1) as u64,
        runs: rows("SELECT job_id, run, record FROM runs ORDER BY job_id, run")?,
        nodes: pairs("SELECT name, record FROM nodes ORDER BY name")?,
        accounts,
        reservations: pairs("SELECT name, record FROM reservations ORDER BY name")?,
        stopped_with_agents: meta("stopped_with_agents")?.is_some_and(|v| v != 0),
    })
}

/// A submission's script, if kept.
pub(crate) fn script(conn: &Connection, id: u64) -> rusqlite::Result<Option<crate::Script>> {
    conn.prepare_cached("SELECT script, environment FROM job_scripts WHERE id = ?1")?
        .query_row(params![id as i64], |r| {
            Ok(crate::Script {
                script: r.get(0)?,
                environment: r.get(1)?,
            })
        })
        .optional()
}
