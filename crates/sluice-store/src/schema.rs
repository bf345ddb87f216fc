//! The database's schema and its versions.
//!
//! `PRAGMA user_version` says which version a database file is at. Version 0 is the
//! original schema (one record per job, step, run, node, account row, reservation);
//! each later version is one migration, run in order at [`crate::Store::open`] in a
//! transaction of its own, so that a database written by any earlier release upgrades
//! at start with nothing lost. A new database is created at version 0 and migrated
//! like any other.
//!
//! - **1**: the columns and indexes accounting queries select jobs by
//!   ([`crate::JobKeys`]): array job and task, user, account, partition, state, name,
//!   submission and end; existing rows get them from their records (the caller's
//!   [`crate::KeysOf`]).

use rusqlite::Connection;

use crate::jobs::{set_keys, KeysOf};

/// Version 0: the tables as the first releases created them.
pub(crate) const SCHEMA_0: &str = "
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, record TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS steps (
        job_id INTEGER NOT NULL, step_id INTEGER NOT NULL, record TEXT NOT NULL,
        PRIMARY KEY (job_id, step_id));
    CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, record TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS runs (
        job_id INTEGER NOT NULL, run INTEGER NOT NULL, record TEXT NOT NULL,
        PRIMARY KEY (job_id, run));
    CREATE TABLE IF NOT EXISTS accounts (
        kind TEXT NOT NULL, key TEXT NOT NULL, record TEXT NOT NULL,
        PRIMARY KEY (kind, key));
    CREATE TABLE IF NOT EXISTS reservations (name TEXT PRIMARY KEY, record TEXT NOT NULL);
    INSERT OR IGNORE INTO meta (key, value) VALUES ('next_job_id', 1);
";

/// Version 1's columns of `jobs`. `ended` is the end time, or `i64::MAX` while the
/// job has not ended, so that "ended since T, or not yet" is one range of an index.
const KEY_COLUMNS: &str = "
    ALTER TABLE jobs ADD COLUMN array_job INTEGER;
    ALTER TABLE jobs ADD COLUMN array_task INTEGER;
    ALTER TABLE jobs ADD COLUMN user TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN account TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN partition_name TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN state TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN name TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN submit INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN ended INTEGER NOT NULL DEFAULT 9223372036854775807;
";

/// Version 1's indexes: what selects few jobs out of a long history — ids (the
/// primary key), an array's tasks, a user's jobs by end, and the time window every
/// `sacct` without `-j` has (since midnight by default). Account, partition, state and
/// name are selected in SQL too, within what these narrow to: an index of their own
/// would be rewritten on every job write (a job's state changes at each step of its
/// life), which measured at half the store's write rate or less, for queries the
/// window already bounds.
const KEY_INDEXES: &str = "
    CREATE INDEX IF NOT EXISTS jobs_array ON jobs (array_job, array_task);
    CREATE INDEX IF NOT EXISTS jobs_user ON jobs (user, ended);
    CREATE INDEX IF NOT EXISTS jobs_ended ON jobs (ended);
";

/// Version 2: batch scripts and environments in a table of their own, apart from the
/// records (one row per submission; an array's tasks share their array's). Records
/// that still hold theirs are moved by the controller at start.
const SCRIPTS: &str = "
    CREATE TABLE IF NOT EXISTS job_scripts (
        id INTEGER PRIMARY KEY, script TEXT NOT NULL, environment TEXT NOT NULL);
";

/// The version this release writes.
pub const VERSION: i64 = 2;

/// Brings the database at `conn` to [`VERSION`], one migration at a time, each in a
/// transaction of its own. `keys_of` gives the keys of a record written before
/// version 1.
///
/// Errors: SQLite's (the file is read-only, corrupt, or from a newer release).
pub(crate) fn migrate(conn: &mut Connection, keys_of: KeysOf) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA_0)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
            Some(format!(
                "the database is at schema version {version}, newer than this release's \
                 {VERSION}"
            )),
        ));
    }
    if version < 1 {
        let tx = conn.transaction()?;
        tx.execute_batch(KEY_COLUMNS)?;
        {
            let mut read = tx.prepare("SELECT id, record FROM jobs")?;
            let mut rows = read.query([])?;
            while let Some(row) = rows.next()? {
                let id: i64 = row.get(0)?;
                let record: String = row.get(1)?;
                set_keys(&tx, id, &keys_of(&record))?;
            }
        }
        tx.execute_batch(KEY_INDEXES)?;
        tx.pragma_update(None, "user_version", 1)?;
        tx.commit()?;
    }
    if version < 2 {
        let tx = conn.transaction()?;
        tx.execute_batch(SCRIPTS)?;
        tx.pragma_update(None, "user_version", 2)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::temp;
    use crate::{JobQuery, Row, Store};
    use rusqlite::params;

    /// A database as version 0 wrote it: jobs, steps, a run, a node, an account row and
    /// a reservation, written with version 0's own statements.
    fn version_0(path: &std::path::Path) {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(SCHEMA_0).unwrap();
        for (id, record) in [
            (1, "job 1 user=alice state=COMPLETED submit=10 end=20"),
            (2, "job 2 user=bob state=FAILED submit=11 end=30 array=2_0"),
            (
                3,
                "job 3 user=bob state=COMPLETED submit=11 end=31 array=2_1",
            ),
            (4, "job 4 user=alice state=RUNNING submit=40"),
        ] {
            conn.execute(
                "INSERT INTO jobs (id, record) VALUES (?1, ?2)",
                params![id, record],
            )
            .unwrap();
        }
        for (job, step) in [(1, 0i64), (1, 4294967294), (3, 0)] {
            conn.execute(
                "INSERT INTO steps (job_id, step_id, record) VALUES (?1, ?2, ?3)",
                params![job, step, format!("step {job}.{step}")],
            )
            .unwrap();
        }
        conn.execute_batch(
            "INSERT INTO runs VALUES (4, 0, 'run 4.0');
             INSERT INTO nodes VALUES ('n1', 'drain');
             INSERT INTO accounts VALUES ('user', 'alice', 'u');
             INSERT INTO reservations VALUES ('r', 'R');
             UPDATE meta SET value = 5 WHERE key = 'next_job_id';",
        )
        .unwrap();
    }

    #[test]
    fn a_version_0_database_upgrades_at_start_with_nothing_lost() {
        let path = temp("schema0");
        version_0(&path);
        let (store, writer, snap) = Store::open(&path, 1, crate::tests::keys).unwrap();
        // Every record is still there, as it was.
        let jobs: Vec<(u64, &str)> = snap.jobs.iter().map(|r| (r.id, &r.record[..5])).collect();
        assert_eq!(
            jobs,
            [(1, "job 1"), (2, "job 2"), (3, "job 3"), (4, "job 4")]
        );
        assert_eq!(snap.steps.len(), 3);
        assert_eq!(
            snap.runs,
            [Row {
                id: 4,
                step: Some(0),
                record: "run 4.0".into()
            }]
        );
        assert_eq!(snap.nodes, [("n1".to_string(), "drain".to_string())]);
        assert_eq!(snap.accounts.len(), 1);
        assert_eq!(snap.reservations, [("r".to_string(), "R".to_string())]);
        assert_eq!(snap.next_job_id, 5);
        // ...and selected by the keys read from it.
        let found = |q: JobQuery| -> Vec<u64> {
            store
                .query_jobs(&q)
                .unwrap()
                .jobs
                .iter()
                .map(|r| r.id)
                .collect()
        };
        assert_eq!(
            found(JobQuery {
                users: vec!["bob".into()],
                ..JobQuery::default()
            }),
            [2, 3]
        );
        assert_eq!(
            found(JobQuery {
                tasks: vec![(2, 1)],
                ..JobQuery::default()
            }),
            [3]
        );
        assert_eq!(
            found(JobQuery {
                ended_since: Some(31),
                ..JobQuery::default()
            }),
            [3, 4]
        );
        let one = store
            .query_jobs(&JobQuery {
                jobs: vec![1],
                runs: true,
                ..JobQuery::default()
            })
            .unwrap();
        assert_eq!(one.steps.len(), 2);
        drop(store);
        drop(writer);
        // Upgraded once: the version is kept, a reopen reads the keys from the columns.
        let conn = Connection::open(&path).unwrap();
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, VERSION);
        let (store, _w, _) = Store::open(&path, 1, |_| panic!("read again")).unwrap();
        assert_eq!(
            store
                .query_jobs(&JobQuery {
                    states: vec!["RUNNING".into()],
                    ..JobQuery::default()
                })
                .unwrap()
                .jobs
                .len(),
            1
        );
    }

    #[test]
    fn a_database_of_a_newer_release_is_refused() {
        let path = temp("newer");
        version_0(&path);
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", VERSION + 1)
            .unwrap();
        drop(conn);
        let e = Store::open(&path, 1, crate::tests::keys).err().unwrap();
        assert!(e.to_string().contains("newer than this release"), "{e}");
    }
}
