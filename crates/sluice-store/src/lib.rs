//! Durable state for the Sluice controller.
//!
//! Two engines behind one seam (`backend`): an embedded SQLite file (the default,
//! `sqlite`) or a PostgreSQL database ([`pg`]), named by a [`Location`]. What follows
//! says "SQLite" where it is SQLite's; PostgreSQL keeps the same tables and gives the
//! same guarantees (a commit is durable when PostgreSQL answers it).
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

use rusqlite::Connection;

pub mod audit;
mod backend;
pub mod clusters;
pub mod copy;
pub mod jobs;
pub mod lease;
pub mod location;
pub mod pg;
mod pg_rows;
#[cfg(any(test, feature = "test-server"))]
pub mod pg_server;
pub mod schema;
mod sqlite;

pub use clusters::ClusterRow;
pub use location::{Location, Member, PgTarget, DEFAULT_CLUSTER};
pub use pg::Fence;

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
    /// PostgreSQL refused, or could not be reached.
    #[error("{}", pg_message(server, source))]
    Postgres {
        /// The server and database (`user@host:port/database`).
        server: String,
        /// The driver's error.
        source: postgres::Error,
    },
    /// The database's schema is not one this release can use.
    #[error("{0}")]
    Schema(String),
    /// The transaction that held this write failed (its error, as told to each write
    /// it held).
    #[error("{0}")]
    Failed(String),
    /// The writer thread is gone (the store was shut down).
    #[error("the state store has shut down")]
    Closed,
    /// Another controller took over (the database's fencing epoch is newer than the
    /// one this controller's writes are conditioned on): nothing was written.
    #[error(
        "Unable to contact slurm controller: another controller took over (fencing epoch \
         {now}, this controller's {ours}); nothing was written"
    )]
    Fenced {
        /// This controller's epoch.
        ours: i64,
        /// The database's.
        now: i64,
    },
    /// Another live controller serves this cluster on the shared database (what to
    /// do, in words).
    #[error("{0}")]
    ClusterTaken(String),
}

impl StoreError {
    /// Whether the database could not be reached (PostgreSQL down or unreachable):
    /// worth trying again later, as the writer reconnects by itself.
    pub fn is_unreachable(&self) -> bool {
        match self {
            StoreError::Postgres { source, .. } => pg_unreachable(source),
            StoreError::Failed(m) => m.starts_with(UNREACHABLE),
            _ => false,
        }
    }
}

/// How an unreachable database's errors begin (Slurm's words for a controller it
/// cannot reach, as the write's caller sees it).
pub const UNREACHABLE: &str = "Unable to contact the state database";

/// Whether `e` says the server could not be reached or went away: no answer at all,
/// a lost connection (class 08), or the server shutting down or starting (57P).
fn pg_unreachable(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        None => !e.to_string().contains("password missing"),
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || code.starts_with("57P")
        }
    }
}

/// What to say of PostgreSQL's error `e` from `server`: what went wrong and what to do.
fn pg_message(server: &str, e: &postgres::Error) -> String {
    use postgres::error::SqlState;
    if e.to_string().contains("password missing") {
        return format!(
            "PostgreSQL {server} asks for a password and none was given: set StoragePassFile"
        );
    }
    if pg_unreachable(e) {
        let text = match e.as_db_error() {
            Some(db) => db.message().to_string(),
            None => e.to_string(),
        };
        return format!("{UNREACHABLE} (PostgreSQL {server}): {text}");
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        return if *code == SqlState::INVALID_PASSWORD {
            format!(
                "PostgreSQL {server} refused the password: check StoragePassFile (or the \
                 password of StorageUrl) against the role's password ({})",
                db.message()
            )
        } else if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
            format!(
                "PostgreSQL {server} refused the connection: {}; allow the controller's \
                 host and role in the server's pg_hba.conf",
                db.message()
            )
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            format!(
                "PostgreSQL {server}: {}; create it (createdb) or set StorageLoc",
                db.message()
            )
        } else {
            format!("PostgreSQL {server}: {}", db.message())
        };
    }
    format!("PostgreSQL {server}: {e}")
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
    /// `next_job_id` moves past them. Its `audit` records (its submission) are
    /// appended in the same transaction.
    Insert {
        first: u64,
        records: Vec<(JobKeys, String)>,
        script: Option<Script>,
        audit: Vec<AuditRecord>,
        reply: Sender<Result<(), StoreError>>,
    },
    /// Insert or replace the script of the submission whose first id is `id`.
    PutScript {
        id: u64,
        script: Script,
    },
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
    DeleteJob {
        id: u64,
    },
    /// Keep the record of run `run` of job `id` as it ended (a requeue).
    PutRun {
        id: u64,
        run: u32,
        record: String,
    },
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
    /// Holds the writer until the sender is dropped: a write the database holds up
    /// (tests of what does not wait for it).
    #[cfg(test)]
    Hold(Receiver<()>),
    Shutdown,
}

/// The controller's durable store. Cheap to clone; all clones share one writer.
#[derive(Clone)]
pub struct Store {
    tx: Sender<Op>,
    location: Location,
    /// Read connections not in use, kept for the next read (at most [`READERS`]).
    readers: Arc<Mutex<Vec<Reader>>>,
    /// How long (milliseconds) a write keeps being tried while the database cannot be
    /// reached ([`Store::retry_unreachable_for`]), shared with the writer.
    patience: Arc<std::sync::atomic::AtomicU64>,
    /// Transactions that wrote something, committed since the store was opened
    /// ([`Store::commits`]), counted by the writer.
    commits: Arc<std::sync::atomic::AtomicU64>,
}

/// Read connections kept open between reads.
const READERS: usize = 4;

/// A read connection, of either engine.
enum Reader {
    Sqlite(Connection),
    Pg(pg::Reader),
}

/// The writer's connection, of either engine.
enum WriteConn {
    Sqlite(Connection, PathBuf),
    Pg(Box<pg::Writer>),
}

impl WriteConn {
    /// Carries out `batch` in one transaction, committed before this returns.
    fn run(&mut self, batch: &[Op]) -> Result<backend::Outcome, StoreError> {
        match self {
            WriteConn::Sqlite(conn, path) => {
                let e = sqlite::error(path);
                let tx = conn.transaction().map_err(&e)?;
                let out = backend::apply(&mut sqlite::SqliteBatch { tx: &tx, path }, batch)?;
                tx.commit().map_err(&e)?;
                Ok(out)
            }
            WriteConn::Pg(w) => w.run(batch),
        }
    }
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

impl Store {
    /// Opens (creating if needed) the SQLite database at `path`: [`Store::open_at`].
    ///
    /// Errors: the file cannot be opened, is not a Sluice database, or is of a newer
    /// schema.
    pub fn open(
        path: &Path,
        first_job_id: u64,
        keys_of: KeysOf,
    ) -> Result<(Store, Writer, Snapshot), StoreError> {
        Store::open_at(&Location::Sqlite(path.to_path_buf()), first_job_id, keys_of)
    }

    /// Opens the database at `location` (a SQLite file is created if needed; a
    /// PostgreSQL database must exist, its tables are created), reads everything in
    /// it, and starts the writer. `first_job_id` applies to a database that holds no
    /// job yet (Slurm's `FirstJobId`). A database of an earlier schema is upgraded
    /// first (`schema::migrate`, [`pg::VERSION`]), `keys_of` reading the keys of the
    /// job records an old SQLite file holds.
    ///
    /// Errors: the database cannot be opened or reached, the password is refused, it
    /// is not a Sluice database, or it is of a newer schema.
    pub fn open_at(
        location: &Location,
        first_job_id: u64,
        keys_of: KeysOf,
    ) -> Result<(Store, Writer, Snapshot), StoreError> {
        Store::open_fenced(location, first_job_id, keys_of, None)
    }

    /// [`Store::open_at`], every write transaction conditioned on `fence`'s epoch
    /// (PostgreSQL; a backup controller's takeover, [`lease`]): once another controller
    /// has taken over, nothing more is written and `fence.on_fenced` is called.
    ///
    /// Errors: as [`Store::open_at`].
    pub fn open_fenced(
        location: &Location,
        first_job_id: u64,
        keys_of: KeysOf,
        fence: Option<Fence>,
    ) -> Result<(Store, Writer, Snapshot), StoreError> {
        let (conn, snapshot) = match location {
            Location::Sqlite(path) => {
                let conn = sqlite::open(path, first_job_id, keys_of)?;
                let snapshot = sqlite::read_all(&conn).map_err(sqlite::error(path))?;
                (WriteConn::Sqlite(conn, path.clone()), snapshot)
            }
            Location::Postgres(target) => pg::off_runtime(|| {
                let mut client = pg::connect(target)?;
                pg::migrate(&mut client, target, first_job_id)?;
                pg::register(&mut client, target)?;
                let snapshot = pg::read_all(&mut client).map_err(pg::error(target))?;
                Ok::<_, StoreError>((
                    WriteConn::Pg(Box::new(
                        pg::Writer::new((**target).clone(), client)?.fenced(fence),
                    )),
                    snapshot,
                ))
            })?,
        };
        let (tx, rx) = mpsc::channel();
        let tx_writer = tx.clone();
        let patience = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let writer_patience = patience.clone();
        let commits = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let writer_commits = commits.clone();
        let handle = std::thread::Builder::new()
            .name("sluice-store".into())
            .spawn(move || writer_loop(conn, rx, &writer_patience, &writer_commits))
            .expect("spawn the store writer");
        Ok((
            Store {
                tx,
                location: location.clone(),
                readers: Arc::default(),
                patience,
                commits,
            },
            Writer {
                handle: Some(handle),
                tx: tx_writer,
            },
            snapshot,
        ))
    }

    /// Has a write that finds the database unreachable (PostgreSQL restarted, a short
    /// outage) tried again, its callers waiting, until `patience` has passed since the
    /// database was first found gone; only then are they told it failed. Zero (the
    /// default): told at once. Nothing is acknowledged before it is committed either
    /// way.
    pub fn retry_unreachable_for(&self, patience: std::time::Duration) {
        self.patience.store(
            patience.as_millis().min(u128::from(u64::MAX)) as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// How many transactions that wrote something the writer has committed since the
    /// store was opened: each one sync of SQLite's log (or one durable commit of
    /// PostgreSQL). What a caller counts to see its writes share transactions.
    pub fn commits(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Where the store keeps its state.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Runs `read` on a read connection: one kept from an earlier read, or a new one.
    /// A connection whose read failed is not kept (it may be the server that went).
    ///
    /// PostgreSQL's driver runs a runtime of its own, which may not be entered from
    /// the controller's: its reads run on a thread of their own ([`pg::off_runtime`]).
    fn read<T: Send>(
        &self,
        sqlite_read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
        pg_read: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error> + Send,
    ) -> Result<T, StoreError> {
        if matches!(self.location, Location::Postgres(_)) {
            return pg::off_runtime(|| self.read_with(|_| unreachable!(), pg_read));
        }
        self.read_with(sqlite_read, |_| unreachable!())
    }

    fn read_with<T>(
        &self,
        sqlite_read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
        pg_read: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        let kept = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut conn = match (kept, &self.location) {
            (Some(c), _) => c,
            (None, Location::Sqlite(path)) => {
                Reader::Sqlite(sqlite::open_reader(path).map_err(sqlite::error(path))?)
            }
            (None, Location::Postgres(target)) => Reader::Pg(pg::Reader::new(pg::connect(target)?)),
        };
        let result = match (&mut conn, &self.location) {
            (Reader::Sqlite(c), Location::Sqlite(path)) => {
                sqlite_read(c).map_err(sqlite::error(path))
            }
            (Reader::Pg(c), Location::Postgres(target)) => {
                pg_read(c.client()).map_err(pg::error(target))
            }
            _ => unreachable!("a reader of the store's own engine"),
        };
        if result.is_ok() {
            let mut kept = self.readers.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() < READERS {
                kept.push(conn);
            }
        }
        result
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
        self.insert_audited(first, records, script, Vec::new())
    }

    /// [`Store::insert_submission`], with the audit records of the submission
    /// appended in the same transaction: the job and the trail of its submission are
    /// on disk together, or neither is, and a submission costs one commit (one sync of
    /// SQLite's log).
    pub fn insert_audited(
        &self,
        first: u64,
        records: Vec<(JobKeys, String)>,
        script: Option<Script>,
        audit: Vec<AuditRecord>,
    ) -> Receiver<Result<(), StoreError>> {
        let (reply, rx) = mpsc::channel();
        if self
            .tx
            .send(Op::Insert {
                first,
                records,
                script,
                audit,
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
        self.read(|c| sqlite::script(c, id), |c| pg::script(c, id))
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
        self.sync()?;
        self.read(|c| audit::events(c, filter), |c| pg::events(c, filter))
    }

    /// The device holds `filter` selects (by start, then job), each with the event
    /// that started it, including all sent before this call.
    ///
    /// Errors: the writer stopped, or the database cannot be read.
    pub fn audit_holds(&self, filter: &HoldFilter) -> Result<Vec<HoldRow>, StoreError> {
        self.sync()?;
        self.read(|c| audit::holds(c, filter), |c| pg::holds(c, filter))
    }

    /// Everything the database holds now, including all that was sent before this call
    /// (it waits for that first), read on a connection of its own so that the writer is
    /// not held up: what `sacct` reports, long after the controller forgot a job.
    ///
    /// Errors: the writer stopped, or the database cannot be read.
    pub fn load(&self) -> Result<Snapshot, StoreError> {
        self.sync()?;
        self.read(sqlite::read_all, pg::read_all)
    }

    /// The jobs `query` selects, with their steps (and runs, if asked), including all
    /// sent before this call that reach the disk within [`READ_WAIT`] (beyond that, what
    /// is on disk: a read never waits behind a write the database holds up); read on a
    /// connection of its own, through the indexes of [`JobKeys`], so that it costs what
    /// it returns.
    ///
    /// Errors: the writer stopped, or the database cannot be read.
    pub fn query_jobs(&self, query: &JobQuery) -> Result<Found, StoreError> {
        self.settle()?;
        self.read(|c| jobs::find(c, query), |c| pg::find(c, query))
    }

    /// The jobs `query` selects among cluster `cluster`'s (`sacct -M`): this store's
    /// own cluster's ([`Store::query_jobs`]), another's kept in the same PostgreSQL
    /// database, or none — a cluster the database does not hold, as slurmdbd answers
    /// for one it does not know; a SQLite store holds its own cluster only.
    ///
    /// Errors: the database cannot be read.
    pub fn query_cluster_jobs(&self, cluster: &str, query: &JobQuery) -> Result<Found, StoreError> {
        match &self.location {
            Location::Postgres(t) if t.cluster() == cluster => self.query_jobs(query),
            Location::Postgres(_) => {
                self.read(|_| unreachable!(), |c| clusters::find_in(c, cluster, query))
            }
            Location::Sqlite(_) => Ok(Found::default()),
        }
    }

    /// The clusters the database keeps (`sacctmgr show cluster`), by name: every
    /// cluster whose controller ever started on this PostgreSQL database; none for a
    /// SQLite store, which holds its own controller's cluster only.
    ///
    /// Errors: the database cannot be read.
    pub fn clusters(&self) -> Result<Vec<ClusterRow>, StoreError> {
        match &self.location {
            Location::Postgres(_) => self.read(|_| unreachable!(), clusters::list),
            Location::Sqlite(_) => Ok(Vec::new()),
        }
    }

    /// Waits until everything sent before is on disk.
    pub fn sync(&self) -> Result<(), StoreError> {
        let (reply, rx) = mpsc::channel();
        self.tx
            .send(Op::Sync { reply })
            .map_err(|_| StoreError::Closed)?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    /// Holds the writer (what is sent from now on waits) until the sender returned is
    /// dropped.
    #[cfg(test)]
    pub(crate) fn hold_writes(&self) -> Sender<()> {
        let (gate, held) = mpsc::channel();
        let _ = self.tx.send(Op::Hold(held));
        gate
    }

    /// Waits until everything sent before is on disk, at most [`READ_WAIT`]: what a
    /// read does before it reads, so that it sees the writes just made (a job that just
    /// ended) and yet answers while the writer is held up (a disk that stalls, a
    /// PostgreSQL server that does not answer, a long queue of writes). Slurm's `sacct`
    /// reads what slurmdbd has received, which may lag the controller too.
    ///
    /// Errors: the writer stopped.
    fn settle(&self) -> Result<(), StoreError> {
        let (reply, rx) = mpsc::channel();
        self.tx
            .send(Op::Sync { reply })
            .map_err(|_| StoreError::Closed)?;
        match rx.recv_timeout(READ_WAIT) {
            // A write that failed is the writer's business: the read reads what is there.
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => Ok(()),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(StoreError::Closed),
        }
    }
}

/// Most operations folded into one transaction.
const MAX_BATCH: usize = 4096;

/// How long a query of the jobs ([`Store::query_jobs`], `sacct`) waits for the writes
/// sent before it before it reads what is on disk: a group commit's time on a busy
/// disk, far below what a stalled disk or database holds a write.
pub const READ_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// How long the writer waits before trying a batch again while the database cannot be
/// reached.
const RETRY_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

fn writer_loop(
    mut conn: WriteConn,
    rx: Receiver<Op>,
    patience: &std::sync::atomic::AtomicU64,
    commits: &std::sync::atomic::AtomicU64,
) {
    use std::time::{Duration, Instant};
    let mut stop = false;
    // Writes of a batch that failed because the database could not be reached: tried
    // again first in the next batch (those nobody waits for always; those waited for
    // while the patience lasts).
    let mut carried: Vec<Op> = Vec::new();
    // Since when the database has been unreachable.
    let mut gone: Option<Instant> = None;
    while !stop {
        let mut batch = std::mem::take(&mut carried);
        if batch.is_empty() {
            let Ok(first) = rx.recv() else { return };
            batch.push(first);
        } else {
            // Try again soon (within a second once waiting callers were answered),
            // with whatever has come meanwhile.
            let wait = if batch.iter().any(Op::waited) {
                RETRY_EVERY
            } else {
                Duration::from_secs(1)
            };
            match rx.recv_timeout(wait) {
                Ok(op) => batch.push(op),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        stop = batch.iter().any(|op| matches!(op, Op::Shutdown));
        #[cfg(test)]
        for op in &batch {
            if let Op::Hold(gate) = op {
                let _ = gate.recv();
            }
        }
        let result = conn.run(&batch);
        if matches!(&result, Err(e) if e.is_unreachable()) && !stop {
            let since = *gone.get_or_insert_with(Instant::now);
            let patience =
                Duration::from_millis(patience.load(std::sync::atomic::Ordering::Relaxed));
            if since.elapsed() < patience {
                // Nothing was committed: the whole batch, its callers waiting, again.
                carried = batch;
                continue;
            }
            let (waited, unwaited): (Vec<Op>, Vec<Op>) =
                batch.into_iter().partition(|op| op.waited());
            carried = unwaited;
            answer(waited, result);
        } else {
            if result.is_ok() {
                gone = None;
                if batch.iter().any(Op::writes) {
                    commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            answer(batch, result);
        }
    }
}

impl Op {
    /// Whether this writes anything (a sync or a stop alone commits nothing).
    fn writes(&self) -> bool {
        match self {
            Op::Sync { .. } | Op::Shutdown => false,
            #[cfg(test)]
            Op::Hold(_) => false,
            _ => true,
        }
    }

    /// Whether a caller waits for this write's outcome.
    fn waited(&self) -> bool {
        !matches!(
            self,
            Op::PutJob { reply: None, .. }
                | Op::PutStep { reply: None, .. }
                | Op::PutScript { .. }
                | Op::DeleteJob { .. }
                | Op::PutRun { .. }
                | Op::MarkStopped(_)
                | Op::Audit(_)
        )
    }
}

/// Tells each caller waiting on `batch` how its transaction went: all succeeded, or
/// all failed with the transaction's error.
fn answer(batch: Vec<Op>, result: Result<backend::Outcome, StoreError>) {
    match result {
        Ok(outcome) => {
            for (op, n) in batch.into_iter().zip(outcome) {
                match op {
                    Op::PurgeAudit { reply, .. } => {
                        let _ = reply.send(Ok(n.unwrap_or(0)));
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
            let failed = || StoreError::Failed(e.to_string());
            for op in batch {
                match op {
                    Op::PurgeAudit { reply, .. } => {
                        let _ = reply.send(Err(failed()));
                    }
                    Op::PutJob { reply: Some(r), .. } | Op::PutStep { reply: Some(r), .. } => {
                        let _ = r.send(Err(failed()));
                    }
                    Op::Sync { reply }
                    | Op::Insert { reply, .. }
                    | Op::PutNode { reply, .. }
                    | Op::PutAccounts { reply, .. }
                    | Op::PutReservation { reply, .. } => {
                        let _ = reply.send(Err(failed()));
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

    /// Where each durability test runs: a SQLite file, then a PostgreSQL database of
    /// its own on the test server ([`crate::pg_server::shared`]) where one can run.
    pub(crate) fn locations(name: &str) -> Vec<Location> {
        let mut v = vec![Location::Sqlite(temp(name))];
        if let Some(server) = crate::pg_server::shared(name) {
            v.push(Location::Postgres(Box::new(
                server.database(&format!("t_{name}")),
            )));
        }
        v
    }

    pub(crate) fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sluice-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("state.db")
    }

    #[test]
    fn new_jobs_keep_their_ids_and_the_next_id_survives_a_reopen() {
        for path in crate::tests::locations("reopen") {
            {
                let (store, _writer, snap) = Store::open_at(&path, 100, keys).unwrap();
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
            let (_store, _writer, snap) = Store::open_at(&path, 1, keys).unwrap();
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
    }

    #[test]
    fn load_reads_everything_sent_so_far_while_the_writer_runs() {
        for path in crate::tests::locations("load") {
            let (store, _writer, _) = Store::open_at(&path, 1, keys).unwrap();
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
    }

    #[test]
    fn node_records_are_kept_replaced_and_forgotten_across_reopens() {
        for path in crate::tests::locations("nodes") {
            {
                let (store, _writer, snap) = Store::open_at(&path, 1, keys).unwrap();
                assert!(snap.nodes.is_empty());
                let _ = store.put_node("n2", Some("drain".into()));
                let _ = store.put_node("n1", Some("down".into()));
                let _ = store.put_node("n1", Some("down again".into()));
                store.sync().unwrap();
            }
            let (store, writer, snap) = Store::open_at(&path, 1, keys).unwrap();
            assert_eq!(
                snap.nodes,
                vec![
                    ("n1".to_string(), "down again".to_string()),
                    ("n2".to_string(), "drain".to_string())
                ]
            );
            let _ = store.put_node("n1", None);
            drop(writer);
            let (_, _, snap) = Store::open_at(&path, 1, keys).unwrap();
            assert_eq!(snap.nodes, vec![("n2".to_string(), "drain".to_string())]);
        }
    }

    #[test]
    fn account_rows_are_written_together_replaced_deleted_and_read_back() {
        for path in crate::tests::locations("accounts") {
            let row = |kind: &str, key: &str, record: Option<&str>| AccountRow {
                kind: kind.into(),
                key: key.into(),
                record: record.map(str::to_string),
            };
            {
                let (store, _writer, snap) = Store::open_at(&path, 1, keys).unwrap();
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
            let (_store, _writer, snap) = Store::open_at(&path, 1, keys).unwrap();
            assert_eq!(
                snap.accounts,
                vec![
                    row("account", "physics", Some("a2")),
                    row("assoc", "2", Some("s2"))
                ]
            );
        }
    }

    #[test]
    fn reservation_rows_are_replaced_deleted_and_read_back() {
        for path in crate::tests::locations("reservations") {
            {
                let (store, _writer, snap) = Store::open_at(&path, 1, keys).unwrap();
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
            let (_store, _writer, snap) = Store::open_at(&path, 1, keys).unwrap();
            assert_eq!(snap.reservations, vec![("b".to_string(), "B2".to_string())]);
        }
    }

    #[test]
    fn a_submission_and_the_trail_of_it_are_one_commit_or_nothing() {
        // The controller's submission: its record, its script and the audit record
        // of its submission, in one transaction (one sync of SQLite's log). An insert
        // that fails (its id taken) leaves no audit record behind either.
        for path in crate::tests::locations("one-commit") {
            let (store, writer, _) = Store::open_at(&path, 1, keys).unwrap();
            let event = |job_id: u64| AuditRecord {
                time: 5,
                job_id,
                uid: 1000,
                kind: "submitted".into(),
                detail: "{}".into(),
                holds: HoldChange::None,
            };
            let before = store.commits();
            let script = Script {
                script: "#!/bin/sh".into(),
                environment: "A=1".into(),
            };
            store
                .insert_audited(
                    1,
                    rows(["job 1 user=a".to_string()]),
                    Some(script),
                    vec![event(1)],
                )
                .recv()
                .unwrap()
                .unwrap();
            assert_eq!(store.commits() - before, 1, "{path:?}");
            let taken =
                store.insert_audited(1, rows(["job 1 again".to_string()]), None, vec![event(7)]);
            assert!(taken.recv().unwrap().is_err(), "{path:?}");
            store.sync().unwrap();
            assert_eq!(
                store.commits() - before,
                1,
                "{path:?}: nothing more committed"
            );
            let trail: Vec<(u64, String)> = store
                .audit_events(&AuditFilter::default())
                .unwrap()
                .into_iter()
                .map(|r| (r.job_id, r.kind))
                .collect();
            assert_eq!(trail, [(1, "submitted".to_string())], "{path:?}");
            drop(store);
            drop(writer);
            let (store, _writer, snap) = Store::open_at(&path, 1, keys).unwrap();
            assert_eq!(snap.jobs.len(), 1, "{path:?}");
            assert!(store.script(1).unwrap().is_some(), "{path:?}");
        }
    }

    #[test]
    fn concurrent_submitters_share_transactions() {
        for path in crate::tests::locations("group") {
            let (store, writer, _) = Store::open_at(&path, 1, keys).unwrap();
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
            let (_s, _w, snap) = Store::open_at(&path, 1, keys).unwrap();
            assert_eq!(snap.jobs.len(), 1600);
            assert!(snap
                .jobs
                .iter()
                .all(|r| r.record.ends_with(&format!("id{}", r.id))));
        }
    }

    #[test]
    fn scripts_are_kept_apart_read_back_after_a_reopen_and_deleted_with_their_job() {
        for path in crate::tests::locations("scripts") {
            let script = |s: &str| Script {
                script: format!("#!/bin/sh\n{s}\n"),
                environment: format!("[[\"WHO\",\"{s}\"]]"),
            };
            {
                let (store, _writer, _) = Store::open_at(&path, 1, keys).unwrap();
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
            let (store, _writer, snap) = Store::open_at(&path, 1, keys).unwrap();
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
    }

    #[test]
    fn deleted_jobs_take_their_steps_with_them() {
        for path in crate::tests::locations("delete") {
            let (store, _w, _) = Store::open_at(&path, 1, keys).unwrap();
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
            let (_s, _w, snap) = Store::open_at(&path, 1, keys).unwrap();
            assert!(snap.jobs.is_empty() && snap.steps.is_empty());
            assert_eq!(snap.next_job_id, 2, "ids are never reused");
        }
    }
}
