//! The PostgreSQL engine, for sites that run a database server already (and, later, a
//! backup controller sharing it). The same tables as SQLite's, created by the
//! migrations of `migrations/pg/` (each applied once, in a transaction, recorded in
//! `schema_version`); a database of a newer schema is refused. Commits are durable
//! when PostgreSQL says so (`synchronous_commit`, on by default), and a write is
//! acknowledged only after its transaction's commit returned.
//!
//! The writer keeps one connection and reconnects by itself: a batch that finds the
//! server gone fails (every caller waiting on it is told, nothing is acknowledged), and
//! the next batch connects again. Readers take connections of their own.

use postgres::types::ToSql;
use postgres::{Client, GenericClient, NoTls, Statement, Transaction};
use rusqlite::types::Value;

use crate::backend::{apply, Batch, Outcome};
use crate::clusters;
use crate::location::PgTarget;
use crate::pg_rows::{self, HeldRows, RowStatements};
use crate::{
    jobs, AccountRow, AuditFilter, AuditRecord, AuditRow, Found, HoldChange, HoldFilter, HoldRow,
    JobKeys, JobQuery, Op, Row, Script, Snapshot, StoreError,
};

/// The migrations, in order: version, SQL.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/pg/0001_initial.sql")),
    (2, include_str!("../migrations/pg/0002_clusters.sql")),
];

/// The schema version this release writes.
pub const VERSION: i64 = 2;

/// Serialises migrations between controllers starting at once (an advisory lock's key).
const MIGRATION_LOCK: i64 = 0x5111ce;

/// Runs `f` on a thread of its own when called from within a tokio runtime (the
/// controller's): the driver blocks on a runtime of its own, which tokio refuses to
/// start, or drop, inside another.
pub(crate) fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(f)
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// A read connection, dropped on a thread of its own (see [`off_runtime`]).
pub(crate) struct Reader(Option<Client>);

impl Reader {
    pub(crate) fn new(client: Client) -> Reader {
        Reader(Some(client))
    }

    pub(crate) fn client(&mut self) -> &mut Client {
        self.0.as_mut().expect("kept until dropped")
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            let _ = std::thread::Builder::new()
                .name("sluice-store-close".into())
                .spawn(move || drop(c));
        }
    }
}

/// PostgreSQL's error, naming the server.
pub(crate) fn error(target: &PgTarget) -> impl Fn(postgres::Error) -> StoreError + '_ {
    move |source| StoreError::Postgres {
        server: target.describe(),
        source,
    }
}

/// Seconds to connect, unless the connection string says (`connect_timeout`).
pub const CONNECT_TIMEOUT_SECS: u64 = 10;
/// Seconds a silent connection waits before TCP keepalive probes start
/// (`keepalives_idle`; libpq's default, the system's two hours, would let a dead
/// server go unnoticed that long).
pub const KEEPALIVE_IDLE_SECS: u64 = 10;
/// Seconds between keepalive probes (`keepalives_interval`).
pub const KEEPALIVE_INTERVAL_SECS: u64 = 5;
/// Unanswered probes after which the connection is given up (`keepalives_retries`).
pub const KEEPALIVE_RETRIES: u32 = 3;
/// Seconds sent data may stay unacknowledged before the connection is given up
/// (`tcp_user_timeout`): keepalives do not probe while a statement waits for its
/// acknowledgement, so a server that vanished under a commit is noticed by this.
pub const TCP_USER_TIMEOUT_SECS: u64 = 30;
/// The longest a statement may run on the server (`statement_timeout`), unless the
/// connection string's `options` set one: a server that accepts connections but no
/// longer finishes work (a full disk, a lock never released) fails the write instead
/// of holding every waiting submission.
pub const STATEMENT_TIMEOUT_SECS: u64 = 60;

/// A connection to `target`, with the bounds above wherever its connection string
/// does not set its own: a server that stops answering, however it stops, fails the
/// waiting write within about half a minute (nothing is acknowledged then), and the
/// writer reconnects. Its statements mean the target's cluster's tables
/// ([`clusters::enter`]).
pub(crate) fn connect(target: &PgTarget) -> Result<Client, StoreError> {
    let mut client = bounded(target.config.clone())
        .application_name("sluice")
        .connect(NoTls)
        .map_err(error(target))?;
    clusters::enter(&mut client, target.cluster()).map_err(error(target))?;
    Ok(client)
}

/// `config` with the connect, keepalive, send and statement bounds it does not set.
fn bounded(mut config: postgres::Config) -> postgres::Config {
    use std::time::Duration;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(CONNECT_TIMEOUT_SECS));
    }
    if config.get_keepalives() {
        // The library's default idle time is the system's (two hours).
        if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
            config.keepalives_idle(Duration::from_secs(KEEPALIVE_IDLE_SECS));
        }
        if config.get_keepalives_interval().is_none() {
            config.keepalives_interval(Duration::from_secs(KEEPALIVE_INTERVAL_SECS));
        }
        if config.get_keepalives_retries().is_none() {
            config.keepalives_retries(KEEPALIVE_RETRIES);
        }
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(Duration::from_secs(TCP_USER_TIMEOUT_SECS));
    }
    let options = config.get_options().unwrap_or("").to_string();
    if !options.contains("statement_timeout") {
        let timeout = format!("-c statement_timeout={}s", STATEMENT_TIMEOUT_SECS);
        let options = if options.is_empty() {
            timeout
        } else {
            format!("{options} {timeout}")
        };
        config.options(&options);
    }
    config
}

/// Records the controller of `target`'s cluster in the registry and announces it on
/// `client` (the writer's), refusing it if another live controller serves the cluster
/// ([`clusters::register`]).
///
/// A live session is looked for again for a few seconds before refusing: the session
/// of a controller killed a moment ago (restarted at once by its supervisor) ends as
/// soon as the server reads its closed socket.
pub(crate) fn register(client: &mut Client, target: &PgTarget) -> Result<(), StoreError> {
    let e = error(target);
    let deadline = std::time::Instant::now() + REGISTER_PATIENCE;
    loop {
        let mut tx = client.transaction().map_err(&e)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(&e)?;
        match clusters::register(&mut tx, target) {
            Ok(()) => return tx.commit().map_err(&e),
            Err(StoreError::ClusterTaken(_)) if std::time::Instant::now() < deadline => {
                drop(tx);
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            Err(err) => return Err(err),
        }
    }
}

/// How long a start waits for another live controller of its cluster to go away
/// before it is refused.
const REGISTER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

/// Brings the database to [`VERSION`], then applies `first_job_id` if it holds no job.
pub(crate) fn migrate(
    client: &mut Client,
    target: &PgTarget,
    first_job_id: u64,
) -> Result<(), StoreError> {
    let e = error(target);
    let mut tx = client.transaction().map_err(&e)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(&e)?;
    if clusters::adopt(&mut tx, target)? {
        log(&format!(
            "the single-cluster tables of PostgreSQL {} now belong to cluster {}",
            target.describe(),
            target.cluster()
        ));
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_version (
             version BIGINT PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .map_err(&e)?;
    let version: i64 = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])
        .map_err(&e)?
        .get(0);
    if version > VERSION {
        return Err(StoreError::Schema(format!(
            "PostgreSQL {}: the database is at schema version {version}, newer than this \
             release's {VERSION}; run the Sluice release that wrote it (or a newer one), \
             or point StorageLoc at another database",
            target.describe()
        )));
    }
    for (n, sql) in MIGRATIONS.iter().filter(|(n, _)| *n > version) {
        tx.batch_execute(sql).map_err(&e)?;
        tx.execute("INSERT INTO schema_version (version) VALUES ($1)", &[n])
            .map_err(&e)?;
    }
    tx.execute(
        "UPDATE meta SET value = GREATEST(value, $1) WHERE key = 'next_job_id'
         AND NOT EXISTS (SELECT 1 FROM jobs)",
        &[&(first_job_id as i64)],
    )
    .map_err(&e)?;
    tx.commit().map_err(&e)
}

/// The statements every batch uses, prepared once per connection.
struct Statements {
    /// The multi-row writes (`pg_rows.rs`).
    rows: RowStatements,
    audit: Statement,
    take: Statement,
    release: Statement,
}

fn prepare(client: &mut Client) -> Result<Statements, postgres::Error> {
    Ok(Statements {
        rows: pg_rows::prepare(client)?,
        audit: client.prepare(
            "INSERT INTO audit (time, job_id, uid, kind, detail) VALUES ($1, $2, $3, $4, $5)
             RETURNING seq",
        )?,
        take: client.prepare(
            "INSERT INTO audit_holds (job_id, run, node, gpu, start_time, uid, start_seq)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )?,
        release: client.prepare(
            "UPDATE audit_holds SET end_time = $3
             WHERE job_id = $1 AND run = $2 AND end_time IS NULL",
        )?,
    })
}

/// The fencing epoch a controller's writes are conditioned on (see [`crate::lease`]),
/// and what to do when the database's is another: that controller is no longer the
/// active one and must step down.
#[derive(Clone)]
pub struct Fence {
    /// The epoch this controller took over with.
    pub epoch: i64,
    /// The `meta` row that keeps it (`lease::epoch_key`).
    pub key: String,
    /// Called (on the writer's thread) with the database's epoch when a batch finds
    /// it changed; the batch is rolled back and its callers told.
    pub on_fenced: std::sync::Arc<dyn Fn(i64) + Send + Sync>,
}

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fence").field("epoch", &self.epoch).finish()
    }
}

/// The writer's connection: kept while it works, made again when the server is back.
pub(crate) struct Writer {
    target: PgTarget,
    conn: Option<(Client, Statements)>,
    /// Every transaction first checks the epoch (and holds it: a takeover's increment
    /// waits for the transaction to end, and no later one of ours commits).
    fence: Option<Fence>,
}

impl Writer {
    /// The writer for `target`, on `client` (already migrated).
    pub(crate) fn new(target: PgTarget, mut client: Client) -> Result<Writer, StoreError> {
        let st = prepare(&mut client).map_err(error(&target))?;
        Ok(Writer {
            target,
            conn: Some((client, st)),
            fence: None,
        })
    }

    /// This writer, its transactions conditioned on `fence`'s epoch.
    pub(crate) fn fenced(mut self, fence: Option<Fence>) -> Writer {
        self.fence = fence;
        self
    }

    /// Carries out `batch` in one transaction; connects first if the connection was
    /// lost. Any failure rolls the whole batch back.
    pub(crate) fn run(&mut self, batch: &[Op]) -> Result<Outcome, StoreError> {
        let e = error(&self.target);
        if self.conn.as_ref().is_none_or(|(c, _)| c.is_closed()) {
            self.conn = None;
            let mut client = connect(&self.target)?;
            let st = prepare(&mut client).map_err(&e)?;
            clusters::announce(&mut client, &self.target.member).map_err(&e)?;
            log(&format!(
                "reconnected to PostgreSQL {}",
                self.target.describe()
            ));
            self.conn = Some((client, st));
        }
        let (client, st) = self.conn.as_mut().expect("connected above");
        let fence = &self.fence;
        let result = (|| {
            let mut tx = client.transaction().map_err(&e)?;
            if let Some(f) = fence {
                let now: i64 = tx
                    .query_opt("SELECT value FROM meta WHERE key = $1 FOR SHARE", &[&f.key])
                    .map_err(&e)?
                    .map_or(0, |r| r.get(0));
                if now != f.epoch {
                    drop(tx);
                    (f.on_fenced)(now);
                    return Err(StoreError::Fenced { ours: f.epoch, now });
                }
            }
            let mut b = PgBatch {
                tx: &mut tx,
                st,
                target: &self.target,
                held: HeldRows::default(),
            };
            let out = apply(&mut b, batch)?;
            b.send_held()?;
            tx.commit().map_err(&e)?;
            Ok(out)
        })();
        if result.is_err() && client.is_closed() {
            self.conn = None;
        }
        result
    }
}

/// The store has no logger of its own: a line on standard error, as the controller's
/// logs are.
fn log(line: &str) {
    eprintln!("sluice-store: {line}");
}

struct PgBatch<'a, 't> {
    tx: &'a mut Transaction<'t>,
    st: &'a Statements,
    target: &'a PgTarget,
    /// Row writes held to be sent together (`pg_rows.rs`).
    held: HeldRows,
}

/// A SQLite value (what [`jobs::select`] builds) as a PostgreSQL parameter.
pub(crate) fn arg(v: Value) -> Box<dyn ToSql + Sync> {
    match v {
        Value::Integer(i) => Box::new(i),
        Value::Text(s) => Box::new(s),
        Value::Null => Box::new(None::<i64>),
        Value::Real(f) => Box::new(f),
        Value::Blob(b) => Box::new(b),
    }
}

fn refs(args: &[Box<dyn ToSql + Sync>]) -> Vec<&(dyn ToSql + Sync)> {
    args.iter().map(|a| a.as_ref()).collect()
}

impl PgBatch<'_, '_> {
    fn run(&mut self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        self.tx.execute(sql, args).map_err(error(self.target))
    }

    /// Sends the row writes held so far.
    fn send_held(&mut self) -> Result<(), StoreError> {
        self.held
            .send(self.tx, &self.st.rows)
            .map_err(error(self.target))
    }
}

impl Batch for PgBatch<'_, '_> {
    fn next_job_id(&mut self) -> Result<i64, StoreError> {
        self.tx
            .query_one("SELECT value FROM meta WHERE key = 'next_job_id'", &[])
            .map(|r| r.get(0))
            .map_err(error(self.target))
    }

    fn set_next_job_id(&mut self, next: i64) -> Result<(), StoreError> {
        self.run(
            "UPDATE meta SET value = $1 WHERE key = 'next_job_id'",
            &[&next],
        )
        .map(drop)
    }

    fn insert_job(&mut self, id: u64, keys: &JobKeys, record: &str) -> Result<(), StoreError> {
        if self.held.names(id) {
            self.send_held()?;
        }
        self.held.insert_job(id, keys, record);
        Ok(())
    }

    fn put_job(&mut self, id: u64, keys: &JobKeys, record: &str) -> Result<(), StoreError> {
        self.held.put_job(id, keys, record);
        Ok(())
    }

    fn put_step(&mut self, id: u64, step: u64, record: &str) -> Result<(), StoreError> {
        self.held.put_step(id, step, record);
        Ok(())
    }

    fn put_script(&mut self, id: u64, script: &str, environment: &str) -> Result<(), StoreError> {
        self.held.put_script(id, script, environment);
        Ok(())
    }

    fn delete_job(&mut self, id: u64) -> Result<(), StoreError> {
        self.send_held()?;
        let id = id as i64;
        self.run("DELETE FROM steps WHERE job_id = $1", &[&id])?;
        self.run("DELETE FROM job_scripts WHERE id = $1", &[&id])?;
        self.run("DELETE FROM jobs WHERE id = $1", &[&id]).map(drop)
    }

    fn put_run(&mut self, id: u64, run: u32, record: &str) -> Result<(), StoreError> {
        self.run(
            "INSERT INTO runs (job_id, run, record) VALUES ($1, $2, $3)
             ON CONFLICT (job_id, run) DO UPDATE SET record = EXCLUDED.record",
            &[&(id as i64), &i64::from(run), &record],
        )
        .map(drop)
    }

    fn put_node(&mut self, name: &str, record: Option<&str>) -> Result<(), StoreError> {
        match record {
            Some(r) => self.run(
                "INSERT INTO nodes (name, record) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record",
                &[&name, &r],
            ),
            None => self.run("DELETE FROM nodes WHERE name = $1", &[&name]),
        }
        .map(drop)
    }

    fn put_account(&mut self, row: &AccountRow) -> Result<(), StoreError> {
        match &row.record {
            Some(r) => self.run(
                "INSERT INTO accounts (kind, key, record) VALUES ($1, $2, $3)
                 ON CONFLICT (kind, key) DO UPDATE SET record = EXCLUDED.record",
                &[&row.kind, &row.key, r],
            ),
            None => self.run(
                "DELETE FROM accounts WHERE kind = $1 AND key = $2",
                &[&row.kind, &row.key],
            ),
        }
        .map(drop)
    }

    fn put_reservation(&mut self, name: &str, record: Option<&str>) -> Result<(), StoreError> {
        match record {
            Some(r) => self.run(
                "INSERT INTO reservations (name, record) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record",
                &[&name, &r],
            ),
            None => self.run("DELETE FROM reservations WHERE name = $1", &[&name]),
        }
        .map(drop)
    }

    fn mark_stopped(&mut self, stopped: bool) -> Result<(), StoreError> {
        self.run(
            "INSERT INTO meta (key, value) VALUES ('stopped_with_agents', $1)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[&i64::from(stopped)],
        )
        .map(drop)
    }

    fn audit(&mut self, records: &[AuditRecord]) -> Result<(), StoreError> {
        let e = error(self.target);
        for r in records {
            if matches!(r.holds, HoldChange::None) {
                self.held.audit(r.time, r.job_id, r.uid, &r.kind, &r.detail);
                continue;
            }
            // Its sequence number names its holds: sent now, after the events before it.
            self.send_held()?;
            let seq: i64 = self
                .tx
                .query_one(
                    &self.st.audit,
                    &[
                        &r.time,
                        &(r.job_id as i64),
                        &i64::from(r.uid),
                        &r.kind,
                        &r.detail,
                    ],
                )
                .map_err(&e)?
                .get(0);
            match &r.holds {
                HoldChange::None => {}
                HoldChange::Take { run, devices } => {
                    for (node, gpu) in devices {
                        self.tx
                            .execute(
                                &self.st.take,
                                &[
                                    &(r.job_id as i64),
                                    &i64::from(*run),
                                    node,
                                    &gpu.map(i64::from),
                                    &r.time,
                                    &i64::from(r.uid),
                                    &seq,
                                ],
                            )
                            .map_err(&e)?;
                    }
                }
                HoldChange::Release { run } => {
                    self.tx
                        .execute(
                            &self.st.release,
                            &[&(r.job_id as i64), &i64::from(*run), &r.time],
                        )
                        .map_err(&e)?;
                }
            }
        }
        Ok(())
    }

    fn purge_audit(&mut self, before: i64, limit: u64) -> Result<u64, StoreError> {
        self.send_held()?;
        let limit = limit as i64;
        let events = self.run(
            "DELETE FROM audit WHERE seq IN
             (SELECT seq FROM audit WHERE time < $1 ORDER BY time LIMIT $2)",
            &[&before, &limit],
        )?;
        let holds = self.run(
            "DELETE FROM audit_holds WHERE id IN
             (SELECT id FROM audit_holds WHERE end_time < $1 ORDER BY end_time LIMIT $2)",
            &[&before, &limit],
        )?;
        Ok(events + holds)
    }
}

fn row(r: &postgres::Row) -> Row {
    let n = r.len();
    Row {
        id: r.get::<_, i64>(0) as u64,
        step: (n > 2).then(|| r.get::<_, i64>(1) as u32),
        record: r.get(n - 1),
    }
}

/// Everything the database holds (see [`Snapshot`]). Names are ordered bytewise, as
/// SQLite orders them, whatever the database's collation.
pub(crate) fn read_all(c: &mut Client) -> Result<Snapshot, postgres::Error> {
    let mut rows = |sql: &str| -> Result<Vec<postgres::Row>, postgres::Error> { c.query(sql, &[]) };
    let jobs = rows("SELECT id, record FROM jobs ORDER BY id")?;
    let steps = rows("SELECT job_id, step_id, record FROM steps ORDER BY job_id, step_id")?;
    let runs = rows("SELECT job_id, run, record FROM runs ORDER BY job_id, run")?;
    let nodes = rows("SELECT name, record FROM nodes ORDER BY name COLLATE \"C\"")?;
    let accounts = rows(
        "SELECT kind, key, record FROM accounts ORDER BY kind COLLATE \"C\", key COLLATE \"C\"",
    )?;
    let reservations = rows("SELECT name, record FROM reservations ORDER BY name COLLATE \"C\"")?;
    let meta = rows("SELECT key, value FROM meta")?;
    let meta = |key: &str| {
        meta.iter()
            .find(|r| r.get::<_, &str>(0) == key)
            .map(|r| r.get::<_, i64>(1))
    };
    let pairs = |v: Vec<postgres::Row>| v.iter().map(|r| (r.get(0), r.get(1))).collect();
    Ok(Snapshot {
        jobs: jobs.iter().map(row).collect(),
        steps: steps.iter().map(row).collect(),
        next_job_id: meta("next_job_id").unwrap_or(1) as u64,
        runs: runs.iter().map(row).collect(),
        nodes: pairs(nodes),
        accounts: accounts
            .iter()
            .map(|r| AccountRow {
                kind: r.get(0),
                key: r.get(1),
                record: Some(r.get(2)),
            })
            .collect(),
        reservations: pairs(reservations),
        stopped_with_agents: meta("stopped_with_agents").is_some_and(|v| v != 0),
    })
}

/// `sql` with SQLite's `?` placeholders numbered as PostgreSQL's (`$1`, `$2`…).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(ch);
        }
    }
    out
}

/// The jobs `q` selects ([`jobs::select`]), with their steps and (if asked) runs.
pub(crate) fn find(c: &mut impl GenericClient, q: &JobQuery) -> Result<Found, postgres::Error> {
    let (sql, args) = jobs::select(q);
    let args: Vec<Box<dyn ToSql + Sync>> = args.into_iter().map(arg).collect();
    let mut jobs: Vec<Row> = c
        .query(&numbered(&sql), &refs(&args))?
        .iter()
        .map(row)
        .collect();
    jobs.sort_unstable_by_key(|r| r.id);
    let ids: Vec<i64> = jobs.iter().map(|r| r.id as i64).collect();
    let steps = c
        .query(
            "SELECT job_id, step_id, record FROM steps WHERE job_id = ANY($1)
             ORDER BY job_id, step_id",
            &[&ids],
        )?
        .iter()
        .map(row)
        .collect();
    let runs = if q.runs {
        c.query(
            "SELECT job_id, run, record FROM runs WHERE job_id = ANY($1) ORDER BY job_id, run",
            &[&ids],
        )?
        .iter()
        .map(row)
        .collect()
    } else {
        Vec::new()
    };
    Ok(Found { jobs, steps, runs })
}

/// A submission's script, if kept.
pub(crate) fn script(c: &mut Client, id: u64) -> Result<Option<Script>, postgres::Error> {
    Ok(c.query_opt(
        "SELECT script, environment FROM job_scripts WHERE id = $1",
        &[&(id as i64)],
    )?
    .map(|r| Script {
        script: r.get(0),
        environment: r.get(1),
    }))
}

fn event(r: &postgres::Row, at: usize) -> AuditRow {
    AuditRow {
        seq: r.get(at),
        time: r.get(at + 1),
        job_id: r.get::<_, i64>(at + 2) as u64,
        uid: r.get::<_, i64>(at + 3) as u32,
        kind: r.get(at + 4),
        detail: r.get(at + 5),
    }
}

/// The audit events `f` selects, in recording order.
pub(crate) fn events(c: &mut Client, f: &AuditFilter) -> Result<Vec<AuditRow>, postgres::Error> {
    Ok(c.query(
        "SELECT seq, time, job_id, uid, kind, detail FROM audit
         WHERE ($1::BIGINT IS NULL OR job_id = $1) AND ($2::BIGINT IS NULL OR time >= $2)
           AND ($3::BIGINT IS NULL OR time < $3)
         ORDER BY seq",
        &[&f.job.map(|j| j as i64), &f.since, &f.until],
    )?
    .iter()
    .map(|r| event(r, 0))
    .collect())
}

/// The device holds `f` selects, each with the event that started it.
pub(crate) fn holds(c: &mut Client, f: &HoldFilter) -> Result<Vec<HoldRow>, postgres::Error> {
    Ok(c.query(
        "SELECT h.job_id, h.run, h.node, h.gpu, h.start_time, h.end_time, h.uid,
                a.seq, a.time, a.job_id, a.uid, a.kind, a.detail
         FROM audit_holds h LEFT JOIN audit a ON a.seq = h.start_seq
         WHERE h.node = $1 AND ($2::BIGINT IS NULL OR h.gpu = $2)
           AND ($3::BIGINT IS NULL OR h.job_id = $3)
           AND ($5::BIGINT IS NULL OR h.start_time < $5)
           AND ($4::BIGINT IS NULL OR h.end_time IS NULL OR h.end_time > $4)
         ORDER BY h.start_time, h.job_id, h.run, h.gpu",
        &[
            &f.node,
            &f.gpu.map(i64::from),
            &f.job.map(|j| j as i64),
            &f.since,
            &f.until,
        ],
    )?
    .iter()
    .map(|r| HoldRow {
        job_id: r.get::<_, i64>(0) as u64,
        run: r.get::<_, i64>(1) as u32,
        node: r.get(2),
        gpu: r.get::<_, Option<i64>>(3).map(|g| g as u32),
        start: r.get(4),
        end: r.get(5),
        uid: r.get::<_, i64>(6) as u32,
        cause: r.get::<_, Option<i64>>(7).map(|_| event(r, 7)),
    })
    .collect())
}

#[cfg(test)]
mod tests {
    use crate::pg_server::{shared, PgServer};
    use crate::tests::{keys, rows};
    use crate::{Location, PgTarget, Store};

    fn at(t: PgTarget) -> Location {
        Location::Postgres(Box::new(t))
    }

    #[test]
    fn a_database_of_a_newer_schema_is_refused_with_what_to_do() {
        let Some(server) = shared("pg newer schema") else {
            return;
        };
        let target = server.database("t_pg_newer");
        drop(Store::open_at(&at(target.clone()), 1, keys).unwrap());
        let mut c = super::connect(&target).unwrap();
        c.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&(super::VERSION + 1)],
        )
        .unwrap();
        let e = Store::open_at(&at(target), 1, keys)
            .err()
            .unwrap()
            .to_string();
        let (newer, ours) = (super::VERSION + 1, super::VERSION);
        assert!(
            e.contains(&format!(
                "schema version {newer}, newer than this release's {ours}"
            )),
            "{e}"
        );
        assert!(e.contains("StorageLoc"), "says what to do: {e}");
    }

    #[test]
    fn a_batch_sent_row_kind_by_row_kind_leaves_what_row_by_row_would() {
        use crate::{AuditRecord, HoldChange, Op, Script};
        let Some(server) = shared("pg held rows") else {
            return;
        };
        let target = server.database("t_pg_held_rows");
        drop(Store::open_at(&at(target.clone()), 1, keys).unwrap());
        let mut w = super::Writer::new(target.clone(), super::connect(&target).unwrap()).unwrap();
        let (reply, _answers) = std::sync::mpsc::channel();
        let job = |id: u64, record: &str| Op::PutJob {
            id,
            keys: keys(record),
            record: record.into(),
            reply: None,
        };
        let step = |record: &str| Op::PutStep {
            id: 1,
            step: 0,
            record: record.into(),
            reply: None,
        };
        let event = |kind: &str, holds| AuditRecord {
            time: 5,
            job_id: 1,
            uid: 1000,
            kind: kind.into(),
            detail: "{}".into(),
            holds,
        };
        let take = HoldChange::Take {
            run: 0,
            devices: vec![("g1".into(), Some(2))],
        };
        // One batch: a new job written twice more, a step twice, events around one
        // with a device hold, a job written then deleted.
        w.run(&[
            Op::Insert {
                first: 1,
                records: rows(["job 1 user=a".to_string()]),
                script: Some(Script {
                    script: "#!/bin/sh".into(),
                    environment: "A=1".into(),
                }),
                // The trail of its submission, in the same transaction.
                audit: vec![event("submitted", HoldChange::None)],
                reply: reply.clone(),
            },
            job(1, "job 1 user=a state=RUNNING"),
            step("step 0 running"),
            Op::Audit(vec![
                event("started", take),
                event("reason", HoldChange::None),
            ]),
            job(2, "job 2 user=b"),
            Op::DeleteJob { id: 2 },
            step("step 0 ended"),
            job(1, "job 1 user=a state=COMPLETED end=9"),
        ])
        .unwrap();
        let mut c = super::connect(&target).unwrap();
        let all = super::read_all(&mut c).unwrap();
        let jobs: Vec<(u64, String)> = all.jobs.into_iter().map(|r| (r.id, r.record)).collect();
        assert_eq!(jobs, vec![(1, "job 1 user=a state=COMPLETED end=9".into())]);
        let steps: Vec<String> = all.steps.into_iter().map(|r| r.record).collect();
        assert_eq!(steps, vec!["step 0 ended".to_string()]);
        assert_eq!(all.next_job_id, 2);
        let row = c
            .query_one("SELECT state, ended FROM jobs WHERE id = 1", &[])
            .unwrap();
        assert_eq!(
            (row.get::<_, String>(0), row.get::<_, i64>(1)),
            ("COMPLETED".into(), 9)
        );
        let events: Vec<(i64, String)> = c
            .query("SELECT seq, kind FROM audit ORDER BY seq", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let kinds: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(kinds, ["submitted", "started", "reason"]);
        let hold: i64 = c
            .query_one("SELECT start_seq FROM audit_holds", &[])
            .unwrap()
            .get(0);
        assert_eq!(hold, events[1].0, "the hold names its event");
        // A batch inserting an id that exists fails whole: nothing of it is written.
        let e = w.run(&[
            job(3, "job 3 user=c"),
            Op::Insert {
                first: 1,
                records: rows(["job 1 again".to_string()]),
                script: None,
                audit: Vec::new(),
                reply,
            },
        ]);
        assert!(e.is_err());
        let n: i64 = c
            .query_one("SELECT count(*) FROM jobs", &[])
            .unwrap()
            .get(0);
        assert_eq!(n, 1);
    }

    #[test]
    fn connections_are_bounded_unless_the_connection_string_says_otherwise() {
        use std::time::Duration;
        let plain: postgres::Config = "postgresql://slurm@db01/sluice".parse().unwrap();
        let c = super::bounded(plain);
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(10)));
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(10));
        assert_eq!(c.get_keepalives_interval(), Some(Duration::from_secs(5)));
        assert_eq!(c.get_keepalives_retries(), Some(3));
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(30)));
        assert_eq!(c.get_options(), Some("-c statement_timeout=60s"));
        // A site's own settings win.
        let own: postgres::Config = "host=db01 user=slurm connect_timeout=3 \
                                     keepalives_idle=60 tcp_user_timeout=5 \
                                     options='-c statement_timeout=0 -c work_mem=64MB'"
            .parse()
            .unwrap();
        let c = super::bounded(own);
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(3)));
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(60));
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(5)));
        assert_eq!(
            c.get_options(),
            Some("-c statement_timeout=0 -c work_mem=64MB")
        );
        let Some(server) = shared("pg bounds") else {
            return;
        };
        let target = server.database("t_pg_bounds");
        drop(Store::open_at(&at(target.clone()), 1, keys).unwrap());
        let mut c = super::connect(&target).unwrap();
        let timeout: String = c.query_one("SHOW statement_timeout", &[]).unwrap().get(0);
        assert_eq!(timeout, "1min");
    }

    #[test]
    fn a_wrong_password_and_an_unreachable_server_say_so() {
        let Some(server) = shared("pg bad input") else {
            return;
        };
        let url = server
            .url("postgres")
            .replace(crate::pg_server::PASSWORD, "wrong");
        let e = Store::open_at(&at(PgTarget::from_url(&url).unwrap()), 1, keys)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("refused the password"), "{e}");
        assert!(e.contains("StoragePassFile"), "{e}");
        // Nobody listens on this port.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let target = PgTarget::from_parts("127.0.0.1", Some(port), "sluice", "slurm", None);
        let e = Store::open_at(&at(target), 1, keys).err().unwrap();
        assert!(e.is_unreachable());
        let e = e.to_string();
        assert!(
            e.starts_with(&format!(
                "Unable to contact the state database (PostgreSQL sluice@127.0.0.1:{port}/slurm)"
            )),
            "{e}"
        );
    }

    #[test]
    fn writes_fail_while_the_server_is_down_and_the_store_recovers_when_it_returns() {
        let Some(server) = PgServer::start("pg outage") else {
            return;
        };
        let target = server.database("outage");
        let (store, writer, _) = Store::open_at(&at(target.clone()), 1, keys).unwrap();
        store
            .insert_jobs(1, rows(["job 1 user=a".to_string()]))
            .recv()
            .unwrap()
            .unwrap();
        server.pause();
        let e = store
            .insert_jobs(2, rows(["job 2 user=a".to_string()]))
            .recv()
            .unwrap()
            .expect_err("not acknowledged while the server is down");
        assert!(e.is_unreachable(), "{e}");
        assert!(e.to_string().starts_with(crate::UNREACHABLE), "{e}");
        // A write nobody waits for is kept until the server is back.
        store.put_job_later(1, keys("job 1 user=a ended"), "job 1 user=a ended".into());
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(store.load().is_err());
        server.resume();
        // The writer connects again by itself; the failed write is not there.
        store
            .insert_jobs(3, rows(["job 3 user=a".to_string()]))
            .recv()
            .unwrap()
            .unwrap();
        drop(store);
        drop(writer);
        let (_s, _w, snap) = Store::open_at(&at(target), 1, keys).unwrap();
        let ids: Vec<u64> = snap.jobs.iter().map(|r| r.id).collect();
        assert_eq!(ids, [1, 3]);
        assert_eq!(snap.jobs[0].record, "job 1 user=a ended");
        assert_eq!(snap.next_job_id, 4);
    }

    #[test]
    fn a_short_outage_holds_the_writes_waiting_and_they_commit_when_the_server_is_back() {
        let Some(server) = PgServer::start("pg short outage") else {
            return;
        };
        let target = server.database("short");
        let (store, writer, _) = Store::open_at(&at(target.clone()), 1, keys).unwrap();
        store.retry_unreachable_for(std::time::Duration::from_secs(60));
        store
            .insert_jobs(1, rows(["job 1 user=a".to_string()]))
            .recv()
            .unwrap()
            .unwrap();
        // The server restarts: a write made while it is down waits for it, and is
        // acknowledged once committed.
        server.pause();
        let waiting = store.insert_jobs(2, rows(["job 2 user=a".to_string()]));
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(
            waiting.try_recv().is_err(),
            "not answered while the server is down"
        );
        server.resume();
        waiting
            .recv()
            .unwrap()
            .expect("committed once the server is back");
        store
            .insert_jobs(3, rows(["job 3 user=a".to_string()]))
            .recv()
            .unwrap()
            .unwrap();
        drop(store);
        drop(writer);
        let (_s, _w, snap) = Store::open_at(&at(target), 1, keys).unwrap();
        let ids: Vec<u64> = snap.jobs.iter().map(|r| r.id).collect();
        assert_eq!(ids, [1, 2, 3], "no id lost");
        assert_eq!(snap.next_job_id, 4);
    }
}
