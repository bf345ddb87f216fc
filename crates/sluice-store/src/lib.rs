//! Durable state for the Sluice controller.
//!
//! A SQLite database in WAL mode holds the job journal: one row per job (and per step),
//! each a record the controller serialises (this crate does not interpret records, so the
//! controller's types can change freely). Every write goes through one writer thread
//! that commits whatever has queued up in a single transaction — **group commit** — and
//! answers each caller only once its transaction is on disk (`synchronous=FULL`). The
//! controller allocates job ids; the store keeps the next one (`next_job_id`) with the
//! jobs that used them, in the same transaction, so that ids are never reused after a
//! restart.
//!
//! Each job row also carries the [`JobKeys`] the controller reads from its record, in
//! indexed columns: accounting queries ([`Store::query_jobs`], what `sacct` asks) read
//! the rows they select and no others ([`jobs`]). The schema is versioned and
//! upgraded at start ([`schema`]).
//!
//! A batch job's script and environment — most of a submission's size, needed only to
//! launch it — are kept apart from its record, in `job_scripts` (one row per
//! submission: an array's tasks share their array's), written in the same transaction
//! as the job, and read back one at a time when the job is launched
//! ([`Store::script`]). The controller does not keep them in memory.
//!
//! SQLite's page cache is bounded: [`CACHE_KIB`] per connection (the writer, the
//! reader of scripts, and each query's own while it runs).
//!
//! The `accounts` table holds what `sacctmgr` manages (accounts, users, associations,
//! QOS): one row per record, keyed by its kind and name, written in one transaction per
//! change ([`Store::put_accounts`]).
//!
//! The `reservations` table holds advance reservations (`scontrol create reservation`),
//! one record per reservation keyed by its name, each change on disk before it is
//! acknowledged ([`Store::put_reservation`]).
//!
//! The `audit` and `audit_holds` tables keep the audit trail: every scheduling decision
//! with its cause and who held which device when ([`audit`], [`Store::audit`]), purged
//! after the retention time ([`Store::purge_audit`]).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::{params, Connection, OptionalExtension};

pub mod audit;
pub mod jobs;
pub mod schema;

pub use audit::{AuditFilter, AuditRecord, AuditRow, HoldChange, HoldFilter, HoldRow};
pub use jobs::{Found, JobKeys, JobQuery, KeysOf};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused (disk full, corrupt file, locked by another controller...).
    #[error("{path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The writer thread is gone (the store was shut down).
    #[error("the state store has shut down")]
    Closed,
}

/// The page cache of each connection to the database, KiB (SQLite's `cache_size`).
pub const CACHE_KIB: i64 = 2048;

/// A batch job's script and environment as stored: the script, and the environment
/// serialised by the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// The batch script.
    pub script: String,
    /// The submitted environment, serialised.
    pub environment: String,
}

/// A record as stored: the job (or step) id and the controller's serialised record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Job id.
    pub id: u64,
    /// Step id (steps only).
    pub step: Option<u32>,
    /// The serialised record.
    pub record: String,
}

/// Everything the database holds, as read at start-up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Job rows, by id.
    pub jobs: Vec<Row>,
    /// Step rows, by job id then step id.
    pub steps: Vec<Row>,
    /// The id the next submission will get.
    pub next_job_id: u64,
    /// Earlier runs of requeued jobs (what `sacct -D` shows), by job id then run; a
    /// row's `step` holds the run number.
    pub runs: Vec<Row>,
    /// Node records (`scontrol update NodeName=…` state set by an operator), as
    /// `(node name, serialised record)`, by name.
    pub nodes: Vec<(String, String)>,
    /// Account records (`sacctmgr`'s accounts, users, associations, QOS), by kind then
    /// key; `record` is always `Some`.
    pub accounts: Vec<AccountRow>,
    /// Advance reservations, as `(name, serialised record)`, by name.
    pub reservations: Vec<(String, String)>,
    /// The controller last stopped cleanly with its cluster's agents, which ended the
    /// jobs running then (`sluice up` stopped): see [`Store::mark_stopped`].
    pub stopped_with_agents: bool,
}

/// One row of the `accounts` table: a record of some `kind` (the controller's choice:
/// `account`, `user`, `assoc`, `qos`) under `key`. A row written with `record: None` is
/// deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountRow {
    /// What the record is.
    pub kind: String,
    /// Its key within the kind (a name, an id).
    pub key: String,
    /// The serialised record; `None` deletes the row.
    pub record: Option<String>,
}

enum Op {
    /// A new job: its records under consecutive ids from `first` (an array's tasks);
    /// `next_job_id` moves past them.
    Insert {
        first: u64,
        records: Vec<(JobKeys, String)>,
        script: Option<Script>,
        reply: Sender<Result<(), StoreError>>,
    },
    /// Insert or replace the script of the submission whose first id is `id`.
    PutScript { id: u64, script: Script },
    /// Replace a job's record.
    PutJob {
        id: u64,
        keys: JobKeys,
        record: String,
        reply: Option<Sender<Result<(), StoreError>>>,
    },
    /// Insert or replace a step's record.
    PutStep {
        id: u64,
        /// The step's key: its id, above bit 32 its job's run (0: the first).
        step: u64,
        record: String,
        reply: Option<Sender<Result<(), StoreError>>>,
    },
    /// Delete a job, its steps and its script (retention).
    DeleteJob { id: u64 },
    /// Keep the record of run `run` of job `id` as it ended (a requeue).
    PutRun { id: u64, run: u32, record: String },
    /// Insert, replace (`Some`) or delete (`None`) a node's record.
    PutNode {
        name: String,
        record: Option<String>,
        reply: Sender<Result<(), StoreError>>,
    },
    /// Write (or delete) account rows, all in one transaction.
    PutAccounts {
        rows: Vec<AccountRow>,
        reply: Sender<Result<(), StoreError>>,
    },
    /// Insert, replace (`Some`) or delete (`None`) a reservation's record.
    PutReservation {
        name: String,
        record: Option<String>,
        reply: Sender<Result<(), StoreError>>,
    },
    /// Set (or clear) the mark of a clean stop with the cluster's agents.
    MarkStopped(bool),
    /// Append audit records (nobody waits for them).
    Audit(Vec<AuditRecord>),
    /// Delete up to `limit` audit events and holds older than `before`.
    PurgeAudit {
        before: i64,
        limit: u64,
        reply: Sender<Result<u64, StoreError>>,
    },
    /// Wait until everything queued before this is on disk.
    Sync {
        reply: Sender<Result<(), StoreError>>,
    },
    /// Commit what is queued, then stop.
    Shutdown,
}

/// The controller's durable store. Cheap to clone; all clones share one writer.
#[derive(Clone)]
pub struct Store {
    tx: Sender<Op>,
    path: PathBuf,
    /// A read-only connection for [`Store::script`], opened when first needed.
    scripts: Arc<Mutex<Option<Connection>>>,
}

/// Owns the writer thread. Dropping it commits what is queued and stops the thread;
/// later operations on any [`Store`] clone fail with [`StoreError::Closed`].
pub struct Writer {
    handle: Option<JoinHandle<()>>,
    tx: Sender<Op>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.tx.send(Op::Shutdown);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn sqlite(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`, reads everything in it, and
    /// starts the writer. `first_job_id` applies to a new database only (Slurm's
    /// `FirstJobId`). A database of an earlier schema is upgraded first
    /// ([`schema::migrate`]), `keys_of` reading the keys of the job records it holds.
    ///
    /// Errors: the file cannot be opened, is not a Sluice database, or is of a newer
    /// schema.
    pub fn open(
        path: &Path,
        first_job_id: u64,
        keys_of: KeysOf,
    ) -> Result<(Store, Writer, Snapshot), StoreError> {
        let e = sqlite(path);
        let mut conn = Connection::open(path).map_err(&e)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(&e)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(&e)?;
        conn.pragma_update(None, "cache_size", -CACHE_KIB)
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
        let snapshot = read_all(&conn).map_err(&e)?;
        let (tx, rx) = mpsc::channel();
        let tx_writer = tx.clone();
        let thread_path = path.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("sluice-store".into())
            .spawn(move || writer_loop(conn, rx, &thread_path))
            .expect("spawn the store writer");
        Ok((
            Store {
                tx,
                path: path.to_path_buf(),
                scripts: Arc::default(),
            },
            Writer {
                handle: Some(handle),
                tx: tx_writer,
            },
            snapshot,
        ))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a new job's records under consecutive ids from `first` (an array's
    /// tasks), ids the controller allocated: they must be new. The next id kept for a
    /// restart moves past them in the same transaction. The receiver yields once all
    /// are on disk.
    pub fn insert_jobs(
        &self,
        first: u64,
        records: Vec<(JobKeys, String)>,
    ) -> Receiver<Result<(), StoreError>> {
        self.insert_submission(first, records, None)
    }

    /// [`Store::insert_jobs`], with the submission's script and environment kept under
    /// `first` in the same transaction.
    pub fn insert_submission(
        &self,
        first: u64,
        records: Vec<(JobKeys, String)>,
        script: Option<Script>,
    ) -> Receiver<Result<(), StoreError>> {
        let (reply, rx) = mpsc::channel();
        if self
            .tx
            .send(Op::Insert {
                first,
                records,
                script,
                reply: reply.clone(),
            })
            .is_err()
        {
            let _ = reply.send(Err(StoreError::Closed));
        }
        rx
    }

    /// Replaces a job's record and its keys; the receiver yields once it is on disk.
    pub fn put_job(
        &self,
        id: u64,
        keys: JobKeys,
        record: String,
    ) -> Receiver<Result<(), StoreError>> {
        let (reply, rx) = mpsc::channel();
        if self
            .tx
            .send(Op::PutJob {
                id,
                keys,
                record,
                reply: Some(reply.clone()),
            })
            .is_err()
        {
            let _ = reply.send(Err(StoreError::Closed));
        }
        rx
    }

    /// Replaces a job's record without waiting for the disk (state changes that can be
    /// rebuilt after a crash, e.g. a pending reason).
    pub fn put_job_later(&self, id: u64, keys: JobKeys, record: String) {
        let _ = self.tx.send(Op::PutJob {
            id,
            keys,
            record,
            reply: None,
        });
    }

    /// Inserts or replaces a step's record under key `step` (the step's id; a requeued
    /// job's later runs add their run above bit 32); the receiver yields once it is on
    /// disk.
    pub fn put_step(&self, id: u64, step: u64, record: String) -> Receiver<Result<(), StoreError>> {
        let (reply, rx) = mpsc::channel();
        if self
            .tx
            .send(Op::PutStep {
                id,
                step,
                record,
                reply: Some(reply.clone()),
            })
            .is_err()
        {
            let _ = reply.send(Err(StoreError::Closed));
        }
        rx
    }

    /// Keeps the script and environment of the submission whose first id is `id`,
    /// without waiting (it is written before anything sent later).
    pub fn put_script(&self, id: u64, script: Script) {
        let _ = self.tx.send(Op::PutScript { id, script });
    }

    /// The script and environment kept under `id` (see [`Store::insert_submission`]),
    /// if any: written by a committed transaction, read on a connection of its own
    /// (kept for the next call), so that the writer is not held up.
    ///
    /// Errors: the database cannot be read.
    pub fn script(&self, id: u64) -> Result<Option<Script>, StoreError> {
        let e = sqlite(&self.path);
        let mut conn = self.scripts.lock().unwrap_or_else(|p| p.into_inner());
        if conn.is_none() {
            *conn = Some(open_reader(&self.path).map_err(&e)?);
        }
        let c = conn.as_ref().expect("opened above");
        c.prepare_cached("SELECT script, environment FROM job_scripts WHERE id = ?1")
            .and_then(|mut stmt| {
                stmt.query_row(params![id as i64], |r| {
                    Ok(Script {
                        script: r.get(0)?,
                        environment: r.get(1)?,
                    })
                })
                .optional()
            })
            .map_err(e)
    }

    /// Deletes a job, its steps and its script (no wait).
    pub fn delete_job(&self, id: u64) {
        let _ = self.tx.send(Op::DeleteJob { id });
    }

    /// Marks (`true`) that the controller stops cleanly together with its cluster's
    /// agents, which end the jobs running (`sluice up` stopping), or clears the mark
    /// (`false`, once a start has read it); no wait. The next start reads it as
    /// [`Snapshot::stopped_with_agents`]: a crash leaves no mark.
    pub fn mark_stopped(&self, stopped: bool) {
        let _ = self.tx.send(Op::MarkStopped(stopped));
    }

    /// Keeps the record of run `run` of job `id` as that run ended (it was requeued),
    /// without waiting (it is written before anything sent later).
    pub fn put_run(&self, id: u64, run: u32, record: String) {
        let _ = self.tx.send(Op::PutRun { id, run, record });
    }

    /// Stores (`Some`) or forgets (`None`) node `name`'s record; the receiver yields
    /// once it is on disk.
    pub fn put_node(&self, name: &str, record: Option<String>) -> Receiver<Result<(), StoreError>> {
        let (reply, rx) = mpsc::channel();
        if self
            .tx
            .send(Op::PutNode {
                name: name.to_string(),
                record,
                reply: reply.clone(),
            })
            .is_err()
        {
            let _ = reply.send(Err(StoreError::Closed));
        }
        rx
    }

    /// Writes (or, with `record: None`, deletes) account rows in one transaction; the
    /// receiver yields once they are on disk, so that a change is acknowledged only once
    /// it is durable.
    pub fn put_accounts(&self, rows: Vec<AccountRow>) -> Receiver<Result<(), StoreError>> {
        let (reply, rx) = mpsc::channel();
        if self
            .tx
            .send(Op::PutAccounts {
                rows,
                reply: reply.clone(),
            })
            .is_err()
        {
            let _ = reply.send(Err(StoreError::Closed));
        }
        rx
    }

    /// Writes (`Some`) or deletes (`None`) a reservation's record; the receiver yields
    /// once it is on disk, so that a change is acknowledged only once it is durable.
    pub fn put_reservation(
        &self,
        name: &str,
        record: Option<String>,
    ) -> Receiver<Result<(), StoreError>> {
        let (reply, rx) = mpsc::channel();
        if self
            .tx
            .send(Op::PutReservation {
                name: name.to_string(),
                record,
                reply: reply.clone(),
            })
            .is_err()
        {
            let _ = reply.send(Err(StoreError::Closed));
        }
        rx
    }

    /// Appends audit records, without waiting for the disk: they are written in order,
    /// with whatever else is queued, in the writer's next transaction.
    pub fn audit(&self, records: Vec<AuditRecord>) {
        if !records.is_empty() {
            let _ = self.tx.send(Op::Audit(records));
        }
    }

    /// Deletes up to `limit` audit events recorded before `before` (Unix seconds), and
    /// up to `limit` device holds that ended before it (holds still open are kept);
    /// the receiver yields how many rows went. Call again while it yields `limit` or
    /// more: small batches keep the writer free for submissions in between.
    pub fn purge_audit(&self, before: i64, limit: u64) -> Receiver<Result<u64, StoreError>> {
        let (reply, rx) = mpsc::channel();
        if self
            .tx
            .send(Op::PurgeAudit {
                before,
                limit,
                reply: reply.clone(),
            })
            .is_err()
        {
            let _ = reply.send(Err(StoreError::Closed));
        }
        rx
    }

    /// The audit events `filter` selects, in recording order, including all sent before
    /// this call; read on a connection of its own.
    ///
    /// Errors: the writer stopped, or the database cannot be read.
    pub fn audit_events(&self, filter: &AuditFilter) -> Result<Vec<AuditRow>, StoreError> {
        let conn = self.reader()?;
        audit::events(&conn, filter).map_err(sqlite(&self.path))
    }

    /// The device holds `filter` selects (by start, then job), each with the event
    /// that started it, including all sent before this call.
    ///
    /// Errors: the writer stopped, or the database cannot be read.
    pub fn audit_holds(&self, filter: &HoldFilter) -> Result<Vec<HoldRow>, StoreError> {
        let conn = self.reader()?;
        audit::holds(&conn, filter).map_err(sqlite(&self.path))
    }

    /// A read-only connection that sees everything sent before.
    fn reader(&self) -> Result<Connection, StoreError> {
        self.sync()?;
        open_reader(&self.path).map_err(sqlite(&self.path))
    }

    /// Everything the database holds now, including all that was sent before this call
    /// (it waits for that first), read on a connection of its own so that the writer is
    /// not held up: what `sacct` reports, long after the controller forgot a job.
    ///
    /// Errors: the writer stopped, or the database cannot be read.
    pub fn load(&self) -> Result<Snapshot, StoreError> {
        self.sync()?;
        let e = sqlite(&self.path);
        let conn = open_reader(&self.path).map_err(&e)?;
        read_all(&conn).map_err(&e)
    }

    /// The jobs `query` selects, with their steps (and runs, if asked), including all
    /// sent before this call; read on a connection of its own, through the indexes of
    /// [`JobKeys`], so that it costs what it returns.
    ///
    /// Errors: the writer stopped, or the database cannot be read.
    pub fn query_jobs(&self, query: &JobQuery) -> Result<Found, StoreError> {
        let conn = self.reader()?;
        jobs::find(&conn, query).map_err(sqlite(&self.path))
    }

    /// Waits until everything sent before is on disk.
    pub fn sync(&self) -> Result<(), StoreError> {
        let (reply, rx) = mpsc::channel();
        self.tx
            .send(Op::Sync { reply })
            .map_err(|_| StoreError::Closed)?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }
}

/// A read-only connection to the database, its page cache bounded.
fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    Ok(conn)
}

fn read_all(conn: &Connection) -> rusqlite::Result<Snapshot> {
    let mut jobs = Vec::new();
    let mut stmt = conn.prepare("SELECT id, record FROM jobs ORDER BY id")?;
    for r in stmt.query_map([], |r| {
        Ok(Row {
            id: r.get::<_, i64>(0)? as u64,
            step: None,
            record: r.get(1)?,
        })
    })? {
        jobs.push(r?);
    }
    let mut steps = Vec::new();
    let mut stmt =
        conn.prepare("SELECT job_id, step_id, record FROM steps ORDER BY job_id, step_id")?;
    for r in stmt.query_map([], |r| {
        Ok(Row {
            id: r.get::<_, i64>(0)? as u64,
            step: Some(r.get::<_, i64>(1)? as u32),
            record: r.get(2)?,
        })
    })? {
        steps.push(r?);
    }
    let mut runs = Vec::new();
    let mut stmt = conn.prepare("SELECT job_id, run, record FROM runs ORDER BY job_id, run")?;
    for r in stmt.query_map([], |r| {
        Ok(Row {
            id: r.get::<_, i64>(0)? as u64,
            step: Some(r.get::<_, i64>(1)? as u32),
            record: r.get(2)?,
        })
    })? {
        runs.push(r?);
    }
    let mut nodes = Vec::new();
    let mut stmt = conn.prepare("SELECT name, record FROM nodes ORDER BY name")?;
    for r in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))? {
        nodes.push(r?);
    }
    let mut accounts = Vec::new();
    let mut stmt = conn.prepare("SELECT kind, key, record FROM accounts ORDER BY kind, key")?;
    for r in stmt.query_map([], |r| {
        Ok(AccountRow {
            kind: r.get(0)?,
            key: r.get(1)?,
            record: Some(r.get(2)?),
        })
    })? {
        accounts.push(r?);
    }
    let mut reservations = Vec::new();
    let mut stmt = conn.prepare("SELECT name, record FROM reservations ORDER BY name")?;
    for r in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))? {
        reservations.push(r?);
    }
    let next: Option<i64> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'next_job_id'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let stopped: Option<i64> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'stopped_with_agents'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(Snapshot {
        jobs,
        steps,
        next_job_id: next.unwrap_or(1) as u64,
        runs,
        nodes,
        accounts,
        reservations,
        stopped_with_agents: stopped.is_some_and(|v| v != 0),
    })
}

/// Most operations folded into one transaction.
const MAX_BATCH: usize = 4096;

fn writer_loop(mut conn: Connection, rx: Receiver<Op>, path: &Path) {
    let mut stop = false;
    while !stop {
        let Ok(first) = rx.recv() else { return };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        stop = batch.iter().any(|op| matches!(op, Op::Shutdown));
        let result = apply_batch(&mut conn, &mut batch);
        answer(batch, result, path);
    }
}

/// What each operation of a batch produced (ids for submissions).
type Outcome = Vec<Option<u64>>;

fn apply_batch(conn: &mut Connection, batch: &mut [Op]) -> rusqlite::Result<Outcome> {
    let tx = conn.transaction()?;
    let mut out = Vec::with_capacity(batch.len());
    {
        let mut next: i64 = tx.query_row(
            "SELECT value FROM meta WHERE key = 'next_job_id'",
            [],
            |r| r.get(0),
        )?;
        let mut put_script = tx.prepare_cached(
            "INSERT OR REPLACE INTO job_scripts (id, script, environment) VALUES (?1, ?2, ?3)",
        )?;
        let mut put_step = tx.prepare_cached(
            "INSERT OR REPLACE INTO steps (job_id, step_id, record) VALUES (?1, ?2, ?3)",
        )?;
        for op in batch.iter_mut() {
            match op {
                Op::Insert {
                    first,
                    records,
                    script,
                    ..
                } => {
                    let first = *first as i64;
                    for (i, (keys, record)) in records.iter().enumerate() {
                        jobs::insert(&tx, first as u64 + i as u64, keys, record)?;
                    }
                    if let Some(s) = script {
                        put_script.execute(params![first, s.script, s.environment])?;
                    }
                    next = next.max(first + records.len().max(1) as i64);
                    out.push(None);
                }
                Op::PutJob {
                    id, keys, record, ..
                } => {
                    jobs::put(&tx, *id, keys, record)?;
                    out.push(None);
                }
                Op::PutStep {
                    id, step, record, ..
                } => {
                    put_step.execute(params![*id as i64, *step as i64, record.as_str()])?;
                    out.push(None);
                }
                Op::PutScript { id, script } => {
                    put_script.execute(params![*id as i64, script.script, script.environment])?;
                    out.push(None);
                }
                Op::DeleteJob { id } => {
                    tx.execute("DELETE FROM steps WHERE job_id = ?1", params![*id as i64])?;
                    tx.execute("DELETE FROM job_scripts WHERE id = ?1", params![*id as i64])?;
                    tx.execute("DELETE FROM jobs WHERE id = ?1", params![*id as i64])?;
                    out.push(None);
                }
                Op::PutRun { id, run, record } => {
                    tx.execute(
                        "INSERT OR REPLACE INTO runs (job_id, run, record) VALUES (?1, ?2, ?3)",
                        params![*id as i64, *run as i64, record.as_str()],
                    )?;
                    out.push(None);
                }
                Op::PutNode { name, record, .. } => {
                    match record {
                        Some(r) => tx.execute(
                            "INSERT OR REPLACE INTO nodes (name, record) VALUES (?1, ?2)",
                            params![name.as_str(), r.as_str()],
                        )?,
                        None => {
                            tx.execute("DELETE FROM nodes WHERE name = ?1", params![name.as_str()])?
                        }
                    };
                    out.push(None);
                }
                Op::PutAccounts { rows, .. } => {
                    for row in rows.iter() {
                        match &row.record {
                            Some(r) => tx.execute(
                                "INSERT OR REPLACE INTO accounts (kind, key, record) VALUES (?1, ?2, ?3)",
                                params![row.kind.as_str(), row.key.as_str(), r.as_str()],
                            )?,
                            None => tx.execute(
                                "DELETE FROM accounts WHERE kind = ?1 AND key = ?2",
                                params![row.kind.as_str(), row.key.as_str()],
                            )?,
                        };
                    }
                    out.push(None);
                }
                Op::PutReservation { name, record, .. } => {
                    match record {
                        Some(r) => tx.execute(
                            "INSERT OR REPLACE INTO reservations (name, record) VALUES (?1, ?2)",
                            params![name.as_str(), r.as_str()],
                        )?,
                        None => tx.execute(
                            "DELETE FROM reservations WHERE name = ?1",
                            params![name.as_str()],
                        )?,
                    };
                    out.push(None);
                }
                Op::MarkStopped(stopped) => {
                    tx.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES ('stopped_with_agents', ?1)",
                        params![i64::from(*stopped)],
                    )?;
                    out.push(None);
                }
                Op::Audit(records) => {
                    audit::write(&tx, records)?;
                    out.push(None);
                }
                Op::PurgeAudit { before, limit, .. } => {
                    out.push(Some(audit::purge(&tx, *before, *limit)?));
                }
                Op::Sync { .. } | Op::Shutdown => out.push(None),
            }
        }
        tx.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'next_job_id'",
            params![next],
        )?;
    }
    tx.commit()?;
    Ok(out)
}

fn answer(batch: Vec<Op>, result: rusqlite::Result<Outcome>, path: &Path) {
    let failed = |e: &rusqlite::Error| StoreError::Sqlite {
        path: path.to_path_buf(),
        source: rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(e.to_string()),
        ),
    };
    match result {
        Ok(outcome) => {
            for (op, id) in batch.into_iter().zip(outcome) {
                match op {
                    Op::PurgeAudit { reply, .. } => {
                        let _ = reply.send(Ok(id.unwrap_or(0)));
                    }
                    Op::PutJob { reply: Some(r), .. } | Op::PutStep { reply: Some(r), .. } => {
                        let _ = r.send(Ok(()));
                    }
                    Op::Sync { reply }
                    | Op::Insert { reply, .. }
                    | Op::PutNode { reply, .. }
                    | Op::PutAccounts { reply, .. }
                    | Op::PutReservation { reply, .. } => {
                        let _ = reply.send(Ok(()));
                    }
                    _ => {}
                }
            }
        }
        Err(e) => {
            for op in batch {
                match op {
                    Op::PurgeAudit { reply, .. } => {
                        let _ = reply.send(Err(failed(&e)));
                    }
                    Op::PutJob { reply: Some(r), .. } | Op::PutStep { reply: Some(r), .. } => {
                        let _ = r.send(Err(failed(&e)));
                    }
                    Op::Sync { reply }
                    | Op::Insert { reply, .. }
                    | Op::PutNode { reply, .. }
                    | Op::PutAccounts { reply, .. }
                    | Op::PutReservation { reply, .. } => {
                        let _ = reply.send(Err(failed(&e)));
                    }
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test records are words; `key=value` words are their keys (`user=alice`,
    /// `array=3_1`, `end=5`).
    pub(crate) fn keys(record: &str) -> JobKeys {
        let mut k = JobKeys::default();
        for (key, v) in record.split_whitespace().filter_map(|w| w.split_once('=')) {
            match key {
                "user" => k.user = v.into(),
                "account" => k.account = v.into(),
                "partition" => k.partition = v.into(),
                "state" => k.state = v.into(),
                "name" => k.name = v.into(),
                "submit" => k.submit = v.parse().unwrap(),
                "end" => k.end = Some(v.parse().unwrap()),
                "array" => {
                    let (a, t) = v.split_once('_').unwrap();
                    k.array_job = Some(a.parse().unwrap());
                    k.array_task = Some(t.parse().unwrap());
                }
                _ => {}
            }
        }
        k
    }

    /// Records with their keys, as the controller writes them.
    pub(crate) fn rows(records: impl IntoIterator<Item = String>) -> Vec<(JobKeys, String)> {
        records.into_iter().map(|r| (keys(&r), r)).collect()
    }

    pub(crate) fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sluice-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("state.db")
    }

    #[test]
    fn new_jobs_keep_their_ids_and_the_next_id_survives_a_reopen() {
        let path = temp("reopen");
        {
            let (store, _writer, snap) = Store::open(&path, 100, keys).unwrap();
            assert_eq!(snap.next_job_id, 100);
            let a = 100;
            store
                .insert_jobs(a, rows([format!("job {a}")]))
                .recv()
                .unwrap()
                .unwrap();
            store
                .insert_jobs(101, rows((101..104).map(|id| format!("task {id}"))))
                .recv()
                .unwrap()
                .unwrap();
            store
                .insert_jobs(104, rows(["job 104".to_string()]))
                .recv()
                .unwrap()
                .unwrap();
            store
                .put_job(a, keys("job 100 done"), "job 100 done".into())
                .recv()
                .unwrap()
                .unwrap();
            store.put_step(a, 0, "step".into()).recv().unwrap().unwrap();
        }
        let (_store, _writer, snap) = Store::open(&path, 1, keys).unwrap();
        assert_eq!(
            snap.next_job_id, 105,
            "FirstJobId applies to a new database only"
        );
        let jobs: Vec<(u64, &str)> = snap
            .jobs
            .iter()
            .map(|r| (r.id, r.record.as_str()))
            .collect();
        assert_eq!(
            jobs,
            [
                (100, "job 100 done"),
                (101, "task 101"),
                (102, "task 102"),
                (103, "task 103"),
                (104, "job 104")
            ]
        );
        assert_eq!(
            snap.steps,
            [Row {
                id: 100,
                step: Some(0),
                record: "step".into()
            }]
        );
    }

    #[test]
    fn load_reads_everything_sent_so_far_while_the_writer_runs() {
        let path = temp("load");
        let (store, _writer, _) = Store::open(&path, 1, keys).unwrap();
        let id = 1;
        store
            .insert_jobs(id, rows([format!("job {id}")]))
            .recv()
            .unwrap()
            .unwrap();
        store.put_job_later(id, keys("job 1 ended"), "job 1 ended".into());
        let _ = store.put_node("n1", Some("drain".into()));
        store.put_run(1, 0, "job 1 run 0".into());
        let snap = store.load().unwrap();
        assert_eq!(
            snap.runs,
            vec![Row {
                id: 1,
                step: Some(0),
                record: "job 1 run 0".into()
            }]
        );
        assert_eq!(
            snap.jobs,
            vec![Row {
                id: 1,
                step: None,
                record: "job 1 ended".into()
            }]
        );
        assert_eq!(snap.next_job_id, 2);
        assert_eq!(snap.nodes, vec![("n1".to_string(), "drain".to_string())]);
    }

    #[test]
    fn node_records_are_kept_replaced_and_forgotten_across_reopens() {
        let path = temp("nodes");
        {
            let (store, _writer, snap) = Store::open(&path, 1, keys).unwrap();
            assert!(snap.nodes.is_empty());
            let _ = store.put_node("n2", Some("drain".into()));
            let _ = store.put_node("n1", Some("down".into()));
            let _ = store.put_node("n1", Some("down again".into()));
            store.sync().unwrap();
        }
        let (store, writer, snap) = Store::open(&path, 1, keys).unwrap();
        assert_eq!(
            snap.nodes,
            vec![
                ("n1".to_string(), "down again".to_string()),
                ("n2".to_string(), "drain".to_string())
            ]
        );
        let _ = store.put_node("n1", None);
        drop(writer);
        let (_, _, snap) = Store::open(&path, 1, keys).unwrap();
        assert_eq!(snap.nodes, vec![("n2".to_string(), "drain".to_string())]);
    }

    #[test]
    fn account_rows_are_written_together_replaced_deleted_and_read_back() {
        let path = temp("accounts");
        let row = |kind: &str, key: &str, record: Option<&str>| AccountRow {
            kind: kind.into(),
            key: key.into(),
            record: record.map(str::to_string),
        };
        {
            let (store, _writer, snap) = Store::open(&path, 1, keys).unwrap();
            assert!(snap.accounts.is_empty());
            store
                .put_accounts(vec![
                    row("account", "physics", Some("a1")),
                    row("assoc", "2", Some("s2")),
                    row("user", "alice", Some("u1")),
                ])
                .recv()
                .unwrap()
                .unwrap();
            store
                .put_accounts(vec![
                    row("account", "physics", Some("a2")),
                    row("user", "alice", None),
                ])
                .recv()
                .unwrap()
                .unwrap();
        }
        let (_store, _writer, snap) = Store::open(&path, 1, keys).unwrap();
        assert_eq!(
            snap.accounts,
            vec![
                row("account", "physics", Some("a2")),
                row("assoc", "2", Some("s2"))
            ]
        );
    }

    #[test]
    fn reservation_rows_are_replaced_deleted_and_read_back() {
        let path = temp("reservations");
        {
            let (store, _writer, snap) = Store::open(&path, 1, keys).unwrap();
            assert!(snap.reservations.is_empty());
            store
                .put_reservation("b", Some("B1".into()))
                .recv()
                .unwrap()
                .unwrap();
            store
                .put_reservation("a", Some("A1".into()))
                .recv()
                .unwrap()
                .unwrap();
            store
                .put_reservation("b", Some("B2".into()))
                .recv()
                .unwrap()
                .unwrap();
            store.put_reservation("a", None).recv().unwrap().unwrap();
        }
        let (_store, _writer, snap) = Store::open(&path, 1, keys).unwrap();
        assert_eq!(snap.reservations, vec![("b".to_string(), "B2".to_string())]);
    }

    #[test]
    fn concurrent_submitters_share_transactions() {
        let path = temp("group");
        let (store, writer, _) = Store::open(&path, 1, keys).unwrap();
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let s = store.clone();
                std::thread::spawn(move || {
                    (0..200u64)
                        .map(|i| {
                            let id = 1 + t * 200 + i;
                            s.insert_jobs(id, rows([format!("t{t} i{i} id{id}")]))
                                .recv()
                                .unwrap()
                                .unwrap();
                            id
                        })
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        let mut ids: Vec<u64> = threads
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        ids.sort();
        assert_eq!(ids, (1..=1600).collect::<Vec<u64>>());
        drop(store);
        drop(writer);
        let (_s, _w, snap) = Store::open(&path, 1, keys).unwrap();
        assert_eq!(snap.jobs.len(), 1600);
        assert!(snap
            .jobs
            .iter()
            .all(|r| r.record.ends_with(&format!("id{}", r.id))));
    }

    #[test]
    fn scripts_are_kept_apart_read_back_after_a_reopen_and_deleted_with_their_job() {
        let path = temp("scripts");
        let script = |s: &str| Script {
            script: format!("#!/bin/sh\n{s}\n"),
            environment: format!("[[\"WHO\",\"{s}\"]]"),
        };
        {
            let (store, _writer, _) = Store::open(&path, 1, keys).unwrap();
            assert_eq!(store.script(1).unwrap(), None);
            store
                .insert_submission(
                    1,
                    vec![
                        (keys("array 1"), "array 1".into()),
                        (keys("task 2"), "task 2".into()),
                    ],
                    Some(script("a")),
                )
                .recv()
                .unwrap()
                .unwrap();
            store
                .insert_submission(3, vec![(keys("job 3"), "job 3".into())], Some(script("b")))
                .recv()
                .unwrap()
                .unwrap();
            // Read on its own connection while the writer goes on.
            assert_eq!(store.script(1).unwrap(), Some(script("a")));
            assert_eq!(store.script(2).unwrap(), None, "tasks share their array's");
            store.put_script(3, script("c"));
            store.sync().unwrap();
            assert_eq!(store.script(3).unwrap(), Some(script("c")));
        }
        let (store, _writer, snap) = Store::open(&path, 1, keys).unwrap();
        assert_eq!(
            snap.jobs
                .iter()
                .map(|r| r.record.as_str())
                .collect::<Vec<_>>(),
            ["array 1", "task 2", "job 3"],
            "records carry no script"
        );
        assert_eq!(store.script(1).unwrap(), Some(script("a")));
        store.delete_job(3);
        store.sync().unwrap();
        assert_eq!(store.script(3).unwrap(), None);
        assert_eq!(store.script(1).unwrap(), Some(script("a")));
    }

    #[test]
    fn deleted_jobs_take_their_steps_with_them() {
        let path = temp("delete");
        let (store, _w, _) = Store::open(&path, 1, keys).unwrap();
        let id = 1;
        store
            .insert_jobs(id, rows(["j".to_string()]))
            .recv()
            .unwrap()
            .unwrap();
        store.put_step(id, 0, "s".into()).recv().unwrap().unwrap();
        store.delete_job(id);
        store.sync().unwrap();
        drop(store);
        drop(_w);
        let (_s, _w, snap) = Store::open(&path, 1, keys).unwrap();
        assert!(snap.jobs.is_empty() && snap.steps.is_empty());
        assert_eq!(snap.next_job_id, 2, "ids are never reused");
    }
}
