//! A group commit's row writes on PostgreSQL, sent as one multi-row statement per
//! kind instead of one round trip per row.
//!
//! The writes a busy controller makes most — new jobs, job records, steps, scripts,
//! audit events — are held while the batch is applied and sent at the end of it (or
//! before a write that must see them: a deletion, a purge, an audit event with device
//! holds, a new job whose id an earlier write of the batch named) as
//! `INSERT … SELECT * FROM UNNEST($1::bigint[], …)`: each kind's rows in one
//! statement, prepared once per connection. The transaction and its commit are the
//! same as row by row, so an id is still acknowledged only once committed and a failed
//! statement still rolls the whole batch back.
//!
//! Within a kind, a later write of the same key replaces the earlier one before it is
//! sent (an upsert may touch a row once per statement), which is what the same writes
//! in order leave. New jobs are inserted without `ON CONFLICT`, so an id that exists
//! already still fails the batch. Audit events keep their order (`WITH ORDINALITY`,
//! numbered as they came).

use std::collections::HashMap;

use postgres::{Client, Statement, Transaction};
use rusqlite::types::Value;

use crate::JobKeys;

/// The multi-row statements, prepared once per connection.
pub(crate) struct RowStatements {
    insert_jobs: Statement,
    put_jobs: Statement,
    put_steps: Statement,
    put_scripts: Statement,
    audit: Statement,
}

/// The job table's columns, and the array type each is sent as.
const JOB_COLUMNS: [(&str, &str); 11] = [
    ("id", "bigint"),
    ("record", "text"),
    ("array_job", "bigint"),
    ("array_task", "bigint"),
    ("\"user\"", "text"),
    ("account", "text"),
    ("partition_name", "text"),
    ("state", "text"),
    ("name", "text"),
    ("submit", "bigint"),
    ("ended", "bigint"),
];

/// `INSERT INTO table (columns) SELECT * FROM UNNEST($1::type[], …)`.
fn unnest(table: &str, columns: &[(&str, &str)]) -> String {
    let names: Vec<&str> = columns.iter().map(|c| c.0).collect();
    let arrays: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("${}::{}[]", i + 1, c.1))
        .collect();
    format!(
        "INSERT INTO {table} ({}) SELECT * FROM UNNEST({})",
        names.join(", "),
        arrays.join(", ")
    )
}

/// ` ON CONFLICT (key) DO UPDATE SET` every other column.
fn upsert(key: &str, columns: &[(&str, &str)]) -> String {
    let set: Vec<String> = columns
        .iter()
        .filter(|c| !key.split(", ").any(|k| k == c.0))
        .map(|c| format!("{0} = EXCLUDED.{0}", c.0))
        .collect();
    format!(" ON CONFLICT ({key}) DO UPDATE SET {}", set.join(", "))
}

pub(crate) fn prepare(client: &mut Client) -> Result<RowStatements, postgres::Error> {
    let jobs = unnest("jobs", &JOB_COLUMNS);
    let steps = [
        ("job_id", "bigint"),
        ("step_id", "bigint"),
        ("record", "text"),
    ];
    let scripts = [
        ("id", "bigint"),
        ("script", "text"),
        ("environment", "text"),
    ];
    Ok(RowStatements {
        insert_jobs: client.prepare(&jobs)?,
        put_jobs: client.prepare(&format!("{jobs}{}", upsert("id", &JOB_COLUMNS)))?,
        put_steps: client.prepare(&format!(
            "{}{}",
            unnest("steps", &steps),
            upsert("job_id, step_id", &steps)
        ))?,
        put_scripts: client.prepare(&format!(
            "{}{}",
            unnest("job_scripts", &scripts),
            upsert("id", &scripts)
        ))?,
        audit: client.prepare(
            "INSERT INTO audit (time, job_id, uid, kind, detail)
             SELECT t, j, u, k, d FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[],
                 $4::text[], $5::text[]) WITH ORDINALITY AS x(t, j, u, k, d, n)
             ORDER BY n",
        )?,
    })
}

/// Jobs' rows, column by column, one row per id (a later write replaces an earlier).
#[derive(Default)]
struct JobRows {
    at: HashMap<i64, usize>,
    id: Vec<i64>,
    record: Vec<String>,
    array_job: Vec<Option<i64>>,
    array_task: Vec<Option<i64>>,
    texts: [Vec<String>; 5],
    submit: Vec<i64>,
    ended: Vec<i64>,
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(i) => Some(*i),
        _ => None,
    }
}

fn text(v: Value) -> String {
    match v {
        Value::Text(s) => s,
        _ => String::new(),
    }
}

impl JobRows {
    fn push(&mut self, id: u64, keys: &JobKeys, record: &str) {
        let id = id as i64;
        let [aj, at, user, account, partition, state, name, submit, ended] = keys.values();
        let (aj, at, submit, ended) = (int(&aj), int(&at), int(&submit), int(&ended));
        let texts = [user, account, partition, state, name].map(text);
        if let Some(&i) = self.at.get(&id) {
            self.record[i] = record.to_string();
            self.array_job[i] = aj;
            self.array_task[i] = at;
            for (col, v) in self.texts.iter_mut().zip(texts) {
                col[i] = v;
            }
            self.submit[i] = submit.unwrap_or(0);
            self.ended[i] = ended.unwrap_or(i64::MAX);
            return;
        }
        self.at.insert(id, self.id.len());
        self.id.push(id);
        self.record.push(record.to_string());
        self.array_job.push(aj);
        self.array_task.push(at);
        for (col, v) in self.texts.iter_mut().zip(texts) {
            col.push(v);
        }
        self.submit.push(submit.unwrap_or(0));
        self.ended.push(ended.unwrap_or(i64::MAX));
    }

    fn send(&mut self, tx: &mut Transaction<'_>, st: &Statement) -> Result<(), postgres::Error> {
        if self.id.is_empty() {
            return Ok(());
        }
        let [user, account, partition, state, name] = &self.texts;
        tx.execute(
            st,
            &[
                &self.id,
                &self.record,
                &self.array_job,
                &self.array_task,
                user,
                account,
                partition,
                state,
                name,
                &self.submit,
                &self.ended,
            ],
        )?;
        *self = JobRows::default();
        Ok(())
    }
}

/// Rows of a two-part key and two text columns (steps: job, step, record; scripts:
/// id, script, environment), one per key.
#[derive(Default)]
struct KeyedRows {
    at: HashMap<(i64, i64), usize>,
    a: Vec<i64>,
    b: Vec<i64>,
    c: Vec<String>,
    d: Vec<String>,
}

impl KeyedRows {
    fn push(&mut self, key: (i64, i64), c: &str, d: &str) {
        if let Some(&i) = self.at.get(&key) {
            self.c[i] = c.to_string();
            self.d[i] = d.to_string();
            return;
        }
        self.at.insert(key, self.a.len());
        self.a.push(key.0);
        self.b.push(key.1);
        self.c.push(c.to_string());
        self.d.push(d.to_string());
    }

    fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    fn take(&mut self) -> KeyedRows {
        std::mem::take(self)
    }
}

/// Audit events without device holds, column by column, in the order they came.
#[derive(Default)]
struct AuditRows {
    time: Vec<i64>,
    job: Vec<i64>,
    uid: Vec<i64>,
    kind: Vec<String>,
    detail: Vec<String>,
}

/// The writes held until the batch's end (or a write that must follow them).
#[derive(Default)]
pub(crate) struct HeldRows {
    inserts: JobRows,
    puts: JobRows,
    steps: KeyedRows,
    scripts: KeyedRows,
    audit: AuditRows,
}

impl HeldRows {
    /// Whether writes held name job `id` (a new job's insert must be sent after them:
    /// it has to find the id free, as row by row).
    pub(crate) fn names(&self, id: u64) -> bool {
        self.puts.at.contains_key(&(id as i64))
    }

    pub(crate) fn insert_job(&mut self, id: u64, keys: &JobKeys, record: &str) {
        self.inserts.push(id, keys, record);
    }

    pub(crate) fn put_job(&mut self, id: u64, keys: &JobKeys, record: &str) {
        self.puts.push(id, keys, record);
    }

    pub(crate) fn put_step(&mut self, id: u64, step: u64, record: &str) {
        self.steps.push((id as i64, step as i64), record, "");
    }

    pub(crate) fn put_script(&mut self, id: u64, script: &str, environment: &str) {
        self.scripts.push((id as i64, 0), script, environment);
    }

    pub(crate) fn audit(&mut self, time: i64, job: u64, uid: u32, kind: &str, detail: &str) {
        let a = &mut self.audit;
        a.time.push(time);
        a.job.push(job as i64);
        a.uid.push(i64::from(uid));
        a.kind.push(kind.to_string());
        a.detail.push(detail.to_string());
    }

    /// Sends what is held, one statement per kind: new jobs before records (a job is
    /// inserted before it is written again), then steps, scripts and audit events.
    pub(crate) fn send(
        &mut self,
        tx: &mut Transaction<'_>,
        st: &RowStatements,
    ) -> Result<(), postgres::Error> {
        self.inserts.send(tx, &st.insert_jobs)?;
        self.puts.send(tx, &st.put_jobs)?;
        if !self.steps.is_empty() {
            let s = self.steps.take();
            tx.execute(&st.put_steps, &[&s.a, &s.b, &s.c])?;
        }
        if !self.scripts.is_empty() {
            let s = self.scripts.take();
            tx.execute(&st.put_scripts, &[&s.a, &s.c, &s.d])?;
        }
        if !self.audit.time.is_empty() {
            let a = std::mem::take(&mut self.audit);
            tx.execute(&st.audit, &[&a.time, &a.job, &a.uid, &a.kind, &a.detail])?;
        }
        Ok(())
    }
}
