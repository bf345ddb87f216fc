//! Moving a site's state from its SQLite file to PostgreSQL (`sluice db migrate`):
//! every table, row for row, into an empty database (or one emptied first, when told),
//! in one PostgreSQL transaction that commits only when the rows counted on both sides
//! agree and the checksums of the job rows match.
//!
//! The SQLite file is read in one read transaction: a snapshot, even while a
//! controller writes it (what it writes later is not copied: stop it first to move
//! everything).

use std::path::Path;

use postgres::types::ToSql;
use rusqlite::types::Value;
use sha2::{Digest, Sha256};

use crate::location::PgTarget;
use crate::{pg, sqlite, StoreError};

/// The tables copied, in order, with their columns (those both engines have).
const TABLES: &[(&str, &[&str])] = &[
    ("meta", &["key", "value"]),
    (
        "jobs",
        &[
            "id",
            "record",
            "array_job",
            "array_task",
            "\"user\"",
            "account",
            "partition_name",
            "state",
            "name",
            "submit",
            "ended",
        ],
    ),
    ("job_scripts", &["id", "script", "environment"]),
    ("steps", &["job_id", "step_id", "record"]),
    ("runs", &["job_id", "run", "record"]),
    ("nodes", &["name", "record"]),
    ("accounts", &["kind", "key", "record"]),
    ("reservations", &["name", "record"]),
    ("audit", &["seq", "time", "job_id", "uid", "kind", "detail"]),
    (
        "audit_holds",
        &[
            "job_id",
            "run",
            "node",
            "gpu",
            "start_time",
            "end_time",
            "uid",
            "start_seq",
        ],
    ),
];

/// What was copied: rows per table on each side, and the job rows' checksums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyReport {
    /// `(table, rows in the SQLite file, rows in PostgreSQL)`.
    pub tables: Vec<(String, u64, u64)>,
    /// SHA-256 of the SQLite file's job rows (all columns, by id).
    pub source_checksum: String,
    /// The same, of PostgreSQL's job rows after the copy.
    pub target_checksum: String,
}

/// Copies the SQLite database at `from` into the PostgreSQL database `to`, which must
/// hold no job, account, node, reservation or audit row unless `replace` (then it is
/// emptied first, in the same transaction). `progress(done, total)` is called as rows
/// are copied.
///
/// Errors: either database cannot be read or written, the file is of another schema
/// version than this release's (start this release's controller on it once first), the
/// target is not empty, or the counts or checksums disagree (nothing is committed).
pub fn sqlite_to_postgres(
    from: &Path,
    to: &PgTarget,
    replace: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CopyReport, StoreError> {
    let se = sqlite::error(from);
    let pe = pg::error(to);
    if !from.is_file() {
        return Err(StoreError::Schema(format!(
            "{}: no such SQLite database",
            from.display()
        )));
    }
    let src = sqlite::open_reader(from).map_err(&se)?;
    let version: i64 = src
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(&se)?;
    if version != crate::schema::VERSION {
        return Err(StoreError::Schema(format!(
            "{}: schema version {version}, not this release's {}: start this release's \
             controller on it once (it upgrades the file), stop it, then migrate",
            from.display(),
            crate::schema::VERSION
        )));
    }
    src.execute_batch("BEGIN").map_err(&se)?;
    let mut total = 0;
    let mut counts = Vec::new();
    for (table, _) in TABLES {
        let n: i64 = src
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .map_err(&se)?;
        counts.push(n as u64);
        total += n as u64;
    }
    let source_checksum = checksum_sqlite(&src).map_err(&se)?;

    let mut client = pg::connect(to)?;
    pg::migrate(&mut client, to, 1)?;
    let mut tx = client.transaction().map_err(&pe)?;
    let held: i64 = tx
        .query_one(
            "SELECT (SELECT COUNT(*) FROM jobs) + (SELECT COUNT(*) FROM accounts)
                  + (SELECT COUNT(*) FROM nodes) + (SELECT COUNT(*) FROM reservations)
                  + (SELECT COUNT(*) FROM audit) + (SELECT COUNT(*) FROM steps)",
            &[],
        )
        .map_err(&pe)?
        .get(0);
    if held > 0 && !replace {
        return Err(StoreError::Schema(format!(
            "PostgreSQL {}: the database already holds {held} rows of a cluster's state; \
             migrate into an empty database, or pass --replace to empty this one first",
            to.describe()
        )));
    }
    let names: Vec<&str> = TABLES.iter().map(|(t, _)| *t).collect();
    tx.batch_execute(&format!("TRUNCATE {}", names.join(", ")))
        .map_err(&pe)?;
    let mut done = 0;
    for (table, columns) in TABLES {
        let list = columns.join(", ");
        let params: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
        let insert = tx
            .prepare(&format!(
                "INSERT INTO {table} ({list}) VALUES ({})",
                params.join(", ")
            ))
            .map_err(&pe)?;
        let mut stmt = src
            .prepare(&format!("SELECT {list} FROM {table}"))
            .map_err(&se)?;
        let mut rows = stmt.query([]).map_err(&se)?;
        while let Some(r) = rows.next().map_err(&se)? {
            let values: Vec<Box<dyn ToSql + Sync>> = (0..columns.len())
                .map(|i| r.get::<_, Value>(i).map(pg::arg))
                .collect::<rusqlite::Result<_>>()
                .map_err(&se)?;
            let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
            tx.execute(&insert, &refs).map_err(&pe)?;
            done += 1;
            if done % 1000 == 0 {
                progress(done, total);
            }
        }
    }
    progress(done, total);
    // New audit events continue after the copied ones.
    tx.batch_execute(
        "SELECT setval(pg_get_serial_sequence('audit', 'seq'),
                       COALESCE((SELECT MAX(seq) FROM audit), 0) + 1, false)",
    )
    .map_err(&pe)?;
    if !tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'epoch')",
            &[],
        )
        .map_err(&pe)?
        .get::<_, bool>(0)
    {
        tx.execute("INSERT INTO meta (key, value) VALUES ('epoch', 0)", &[])
            .map_err(&pe)?;
    }
    let mut tables = Vec::new();
    for ((table, _), n) in TABLES.iter().zip(counts) {
        let m: i64 = tx
            .query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])
            .map_err(&pe)?
            .get(0);
        tables.push((table.to_string(), n, m as u64));
    }
    let target_checksum = checksum_pg(&mut tx).map_err(&pe)?;
    let report = CopyReport {
        tables,
        source_checksum,
        target_checksum,
    };
    let agree = report.tables.iter().all(|(t, a, b)| a == b || *t == "meta")
        && report.source_checksum == report.target_checksum;
    if !agree {
        return Err(StoreError::Schema(format!(
            "the copy does not match its source, nothing was committed: {report:?}"
        )));
    }
    tx.commit().map_err(&pe)?;
    Ok(report)
}

/// The job rows' columns, as the checksum reads them (both sides alike).
const JOB_ROW: &str = "SELECT id, record, array_job, array_task, \"user\", account, \
                       partition_name, state, name, submit, ended FROM jobs ORDER BY id";

/// One job row as hashed: its columns as text, tab-separated, `\N` for none.
fn hash_row(h: &mut Sha256, cols: &[Option<String>]) {
    for c in cols {
        h.update(c.as_deref().unwrap_or("\\N").as_bytes());
        h.update(b"\t");
    }
    h.update(b"\n");
}

fn checksum_sqlite(c: &rusqlite::Connection) -> rusqlite::Result<String> {
    let mut h = Sha256::new();
    let mut stmt = c.prepare(JOB_ROW)?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let cols: Vec<Option<String>> = (0..11)
            .map(|i| {
                r.get::<_, Value>(i).map(|v| match v {
                    Value::Integer(n) => Some(n.to_string()),
                    Value::Text(s) => Some(s),
                    Value::Null => None,
                    Value::Real(f) => Some(f.to_string()),
                    Value::Blob(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                })
            })
            .collect::<rusqlite::Result<_>>()?;
        hash_row(&mut h, &cols);
    }
    Ok(hex(&h.finalize()))
}

fn checksum_pg(tx: &mut postgres::Transaction) -> Result<String, postgres::Error> {
    let mut h = Sha256::new();
    for r in tx.query(JOB_ROW, &[])? {
        let int = |i: usize| r.get::<_, Option<i64>>(i).map(|n| n.to_string());
        let text = |i: usize| r.get::<_, Option<String>>(i);
        let cols = [
            int(0),
            text(1),
            int(2),
            int(3),
            text(4),
            text(5),
            text(6),
            text(7),
            text(8),
            int(9),
            int(10),
        ];
        hash_row(&mut h, &cols);
    }
    Ok(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{keys, rows, temp};
    use crate::{AuditRecord, HoldChange, Location, Store};

    #[test]
    fn a_sqlite_history_moves_to_postgresql_with_nothing_lost_and_an_empty_target_only() {
        let Some(server) = crate::pg_server::shared("copy") else {
            return;
        };
        let path = temp("copy");
        let source = {
            let (store, _w, _) = Store::open(&path, 1, keys).unwrap();
            store
                .insert_jobs(
                    1,
                    rows((1..=2500).map(|i| format!("job {i} user=u{}", i % 7))),
                )
                .recv()
                .unwrap()
                .unwrap();
            store
                .put_step(3, 0, "step 3.0".into())
                .recv()
                .unwrap()
                .unwrap();
            store.put_run(4, 0, "run 4.0".into());
            let _ = store.put_node("n1", Some("drain".into()));
            let _ = store.put_reservation("r", Some("R".into()));
            store.audit(vec![AuditRecord {
                time: 5,
                job_id: 3,
                uid: 1000,
                kind: "started".into(),
                detail: "{}".into(),
                holds: HoldChange::Take {
                    run: 0,
                    devices: vec![("n1".into(), Some(0))],
                },
            }]);
            store.mark_stopped(true);
            store.load().unwrap()
        };
        let target = server.database("t_copy");
        let mut seen = 0;
        let report = sqlite_to_postgres(&path, &target, false, &mut |d, _| seen = d).unwrap();
        assert_eq!(seen, 2500 + 1 + 1 + 1 + 1 + 1 + 1 + 2);
        assert_eq!(report.source_checksum, report.target_checksum);
        let jobs = report.tables.iter().find(|t| t.0 == "jobs").unwrap();
        assert_eq!(jobs, &("jobs".to_string(), 2500, 2500));
        // Everything reads back as it was, and the store goes on from there.
        let (store, _w, snap) =
            Store::open_at(&Location::Postgres(Box::new(target.clone())), 1, keys).unwrap();
        assert_eq!(snap, source);
        assert_eq!(snap.next_job_id, 2501);
        store.audit(vec![AuditRecord {
            time: 6,
            job_id: 3,
            uid: 1000,
            kind: "ended".into(),
            detail: "{}".into(),
            holds: HoldChange::Release { run: 0 },
        }]);
        let events = store.audit_events(&crate::AuditFilter::default()).unwrap();
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2],
            "the sequence goes on after the copied events"
        );
        drop(store);
        // A second copy into it is refused unless told.
        let e = sqlite_to_postgres(&path, &target, false, &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("--replace"), "{e}");
        let again = sqlite_to_postgres(&path, &target, true, &mut |_, _| {}).unwrap();
        assert_eq!(again.source_checksum, report.source_checksum);
    }
}
