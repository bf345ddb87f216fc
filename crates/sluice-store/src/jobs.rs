//! Accounting queries on the job journal: the keys a job's row is selected by, and the
//! one place their SQL is built.
//!
//! The store does not read records; the controller hands it, with every job record it
//! writes, the record's [`JobKeys`] — array job and task, user, account, partition,
//! state, name, submission and end — which fill indexed columns of `jobs`. A
//! [`JobQuery`] (what `sacct` asks: `-j`, `-u`, `-A`, `-r`, `-s`, `--name`, `-S`,
//! `-E`) becomes one `SELECT` over those indexes ([`select`]), so that a query costs
//! the rows it returns, not the database's history; each job found brings its steps
//! (and, if asked, its requeued runs) by primary key.

use std::sync::LazyLock;

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, OptionalExtension, Result};

use crate::Row;

/// What a job's row is selected by: the controller's reading of its record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobKeys {
    /// For an array's task: the array's job id.
    pub array_job: Option<u64>,
    /// For an array's task: its index.
    pub array_task: Option<u32>,
    /// The owner's name.
    pub user: String,
    /// The account.
    pub account: String,
    /// The partition.
    pub partition: String,
    /// The state, as the controller names it (`COMPLETED`).
    pub state: String,
    /// The job's name.
    pub name: String,
    /// When it was submitted, Unix seconds.
    pub submit: i64,
    /// When it ended, Unix seconds; `None` while it has not.
    pub end: Option<i64>,
}

/// Reads the keys of a record written before the store kept them: run on every job
/// row once, when a database is upgraded ([`crate::schema`]).
pub type KeysOf = fn(&str) -> JobKeys;

/// Which jobs an accounting query selects: a job must match every criterion given (an
/// empty list, `None`: any). Jobs come back by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobQuery {
    /// These jobs, each by its id or, for an array, every task of the array it names.
    /// With `tasks`, a job named by either.
    pub jobs: Vec<u64>,
    /// These array tasks: (array job id, index).
    pub tasks: Vec<(u64, u32)>,
    /// Owned by one of these users (names).
    pub users: Vec<String>,
    /// Charged to one of these accounts.
    pub accounts: Vec<String>,
    /// In one of these partitions.
    pub partitions: Vec<String>,
    /// In one of these states (as [`JobKeys::state`]).
    pub states: Vec<String>,
    /// Named one of these.
    pub names: Vec<String>,
    /// Ended at or after this time, or not ended yet.
    pub ended_since: Option<i64>,
    /// Submitted at or before this time.
    pub submitted_by: Option<i64>,
    /// Also the earlier runs of requeued jobs found.
    pub runs: bool,
}

/// What a query found: the jobs' rows by id, their steps by job then step, their runs
/// (when asked) by job then run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Job rows.
    pub jobs: Vec<Row>,
    /// Their steps.
    pub steps: Vec<Row>,
    /// Their earlier runs (empty unless [`JobQuery::runs`]).
    pub runs: Vec<Row>,
}

/// The key columns of `jobs` ([`crate::schema`]), in the order of
/// [`JobKeys::values`].
const KEY_COLUMNS: [&str; 9] = [
    "array_job",
    "array_task",
    "\"user\"",
    "account",
    "partition_name",
    "state",
    "name",
    "submit",
    "ended",
];

impl JobKeys {
    /// The key columns' values, in [`KEY_COLUMNS`]' order.
    pub(crate) fn values(&self) -> [Value; 9] {
        let int = |v: Option<i64>| v.map_or(Value::Null, Value::Integer);
        [
            int(self.array_job.map(|a| a as i64)),
            int(self.array_task.map(i64::from)),
            Value::Text(self.user.clone()),
            Value::Text(self.account.clone()),
            Value::Text(self.partition.clone()),
            Value::Text(self.state.clone()),
            Value::Text(self.name.clone()),
            Value::Integer(self.submit),
            Value::Integer(self.end.unwrap_or(i64::MAX)),
        ]
    }
}

/// `INSERT` of a job's id, record and keys.
static INSERT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO jobs (id, record, {}) VALUES (?1, ?2{})",
        KEY_COLUMNS.join(", "),
        (3..3 + KEY_COLUMNS.len())
            .map(|n| format!(", ?{n}"))
            .collect::<String>()
    )
});

/// `SELECT` of a job's keys by id.
static KEYS: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {} FROM jobs WHERE id = ?1", KEY_COLUMNS.join(", ")));

/// Inserts job `id`, which must be new, with its record and keys.
pub(crate) fn insert(conn: &Connection, id: u64, keys: &JobKeys, record: &str) -> Result<()> {
    let mut args = vec![Value::Integer(id as i64), Value::Text(record.to_string())];
    args.extend(keys.values());
    conn.prepare_cached(&INSERT)?
        .execute(params_from_iter(args))?;
    Ok(())
}

/// Writes job `id`'s record and keys (inserting it if it is new), setting only the key
/// columns whose values changed: an index none of whose columns changed is not
/// rewritten, and most writes of a job change its record and state only.
pub(crate) fn put(conn: &Connection, id: u64, keys: &JobKeys, record: &str) -> Result<()> {
    let old: Option<Vec<Value>> = conn
        .prepare_cached(&KEYS)?
        .query_row([id as i64], |r| {
            (0..KEY_COLUMNS.len())
                .map(|i| r.get::<_, Value>(i))
                .collect()
        })
        .optional()?;
    let Some(old) = old else {
        return insert(conn, id, keys, record);
    };
    let mut sql = String::from("UPDATE jobs SET record = ?2");
    let mut args = vec![Value::Integer(id as i64), Value::Text(record.to_string())];
    for ((column, was), now) in KEY_COLUMNS.iter().zip(old).zip(keys.values()) {
        if was != now {
            args.push(now);
            sql.push_str(&format!(", {column} = ?{}", args.len()));
        }
    }
    sql.push_str(" WHERE id = ?1");
    conn.prepare_cached(&sql)?.execute(params_from_iter(args))?;
    Ok(())
}

/// Sets every key column of job `id` (a database being upgraded).
pub(crate) fn set_keys(conn: &Connection, id: i64, keys: &JobKeys) -> Result<()> {
    let mut sql = String::from("UPDATE jobs SET ");
    let mut args = vec![Value::Integer(id)];
    for (column, value) in KEY_COLUMNS.iter().zip(keys.values()) {
        args.push(value);
        if args.len() > 2 {
            sql.push_str(", ");
        }
        sql.push_str(&format!("{column} = ?{}", args.len()));
    }
    sql.push_str(" WHERE id = ?1");
    conn.prepare_cached(&sql)?.execute(params_from_iter(args))?;
    Ok(())
}

/// The `SELECT id, record FROM jobs …` for `q`, with its parameters in order.
pub(crate) fn select(q: &JobQuery) -> (String, Vec<Value>) {
    let mut sql = String::from("SELECT id, record FROM jobs");
    let mut args: Vec<Value> = Vec::new();
    let mut terms: Vec<String> = Vec::new();
    let list = |n: usize| vec!["?"; n].join(", ");
    if !q.jobs.is_empty() || !q.tasks.is_empty() {
        let mut named: Vec<String> = Vec::new();
        if !q.jobs.is_empty() {
            let l = list(q.jobs.len());
            named.push(format!("id IN ({l})"));
            named.push(format!("array_job IN ({l})"));
            for _ in 0..2 {
                args.extend(q.jobs.iter().map(|&j| Value::Integer(j as i64)));
            }
        }
        let mut arrays: Vec<u64> = q.tasks.iter().map(|t| t.0).collect();
        arrays.sort_unstable();
        arrays.dedup();
        for a in arrays {
            let tasks: Vec<u32> = q.tasks.iter().filter(|t| t.0 == a).map(|t| t.1).collect();
            named.push(format!(
                "(array_job = ? AND array_task IN ({}))",
                list(tasks.len())
            ));
            args.push(Value::Integer(a as i64));
            args.extend(tasks.into_iter().map(|t| Value::Integer(i64::from(t))));
        }
        terms.push(format!("({})", named.join(" OR ")));
    }
    for (column, values) in [
        ("\"user\"", &q.users),
        ("account", &q.accounts),
        ("partition_name", &q.partitions),
        ("state", &q.states),
        ("name", &q.names),
    ] {
        if !values.is_empty() {
            terms.push(format!("{column} IN ({})", list(values.len())));
            args.extend(values.iter().map(|v| Value::Text(v.clone())));
        }
    }
    if let Some(t) = q.ended_since {
        terms.push("ended >= ?".into());
        args.push(Value::Integer(t));
    }
    if let Some(t) = q.submitted_by {
        terms.push("submit <= ?".into());
        args.push(Value::Integer(t));
    }
    if !terms.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&terms.join(" AND "));
    }
    // No `ORDER BY id`: it would tempt SQLite into walking the whole table in id order
    // rather than the index of a window; the rows found are sorted afterwards.
    (sql, args)
}

/// Runs `q` on `conn`: the jobs it selects, then each one's steps and runs by key.
pub(crate) fn find(conn: &Connection, q: &JobQuery) -> Result<Found> {
    let (sql, args) = select(q);
    let mut stmt = conn.prepare(&sql)?;
    let mut jobs: Vec<Row> = stmt
        .query_map(params_from_iter(args), |r| {
            Ok(Row {
                id: r.get::<_, i64>(0)? as u64,
                step: None,
                record: r.get(1)?,
            })
        })?
        .collect::<Result<_>>()?;
    jobs.sort_unstable_by_key(|r| r.id);
    let by_job = |sql: &str| -> Result<Vec<Row>> {
        let mut stmt = conn.prepare(sql)?;
        let mut out = Vec::new();
        for j in &jobs {
            for r in stmt.query_map([j.id as i64], |r| {
                Ok(Row {
                    id: r.get::<_, i64>(0)? as u64,
                    step: Some(r.get::<_, i64>(1)? as u32),
                    record: r.get(2)?,
                })
            })? {
                out.push(r?);
            }
        }
        Ok(out)
    };
    let steps =
        by_job("SELECT job_id, step_id, record FROM steps WHERE job_id = ?1 ORDER BY step_id")?;
    let runs = if q.runs {
        by_job("SELECT job_id, run, record FROM runs WHERE job_id = ?1 ORDER BY run")?
    } else {
        Vec::new()
    };
    Ok(Found { jobs, steps, runs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{rows, temp};
    use crate::Store;

    /// A database of `n` finished jobs by five users, job `i` ending at `i`; job 7 is an
    /// array of tasks 7..10 (`array=7_i`), job 20 is still running.
    fn history(at: &crate::Location, n: u64) -> (Store, crate::Writer) {
        let (store, writer, _) = Store::open_at(at, 1, crate::tests::keys).unwrap();
        let record = |i: u64| {
            let user = format!("u{}", i % 5);
            let mut r = format!(
                "job {i} user={user} account=acct{} partition={} name=n{} submit={} ",
                i % 3,
                if i.is_multiple_of(2) { "even" } else { "odd" },
                i % 4,
                i - 1
            );
            if i == 20 {
                r.push_str("state=RUNNING");
            } else {
                r.push_str(&format!(
                    "state={} end={i}",
                    if i.is_multiple_of(10) {
                        "FAILED"
                    } else {
                        "COMPLETED"
                    }
                ));
            }
            if (7..=10).contains(&i) {
                r.push_str(&format!(" array=7_{}", i - 7));
            }
            r
        };
        store
            .insert_jobs(1, rows((1..=n).map(record)))
            .recv()
            .unwrap()
            .unwrap();
        for i in 1..=n {
            store
                .put_step(i, 0, format!("step {i}.0"))
                .recv()
                .unwrap()
                .unwrap();
        }
        store.put_run(20, 0, "run 20.0".into());
        (store, writer)
    }

    fn ids(found: &Found) -> Vec<u64> {
        found.jobs.iter().map(|r| r.id).collect()
    }

    #[test]
    fn each_filter_selects_exactly_its_jobs_with_their_steps() {
        for at in crate::tests::locations("filters") {
            let (store, _w) = history(&at, 40);
            let q = |q: JobQuery| store.query_jobs(&q).unwrap();
            // One job: its row and its step, nothing else.
            let one = q(JobQuery {
                jobs: vec![12],
                ..JobQuery::default()
            });
            assert_eq!(ids(&one), [12]);
            assert_eq!(
                one.steps,
                [Row {
                    id: 12,
                    step: Some(0),
                    record: "step 12.0".into()
                }]
            );
            assert!(one.runs.is_empty(), "runs only when asked");
            // An array's id names all its tasks; a task alone; both together.
            let array = |jobs: Vec<u64>, tasks: Vec<(u64, u32)>| {
                ids(&q(JobQuery {
                    jobs,
                    tasks,
                    ..JobQuery::default()
                }))
            };
            assert_eq!(array(vec![7], vec![]), [7, 8, 9, 10]);
            assert_eq!(array(vec![], vec![(7, 2)]), [9]);
            assert_eq!(array(vec![3], vec![(7, 1), (7, 3)]), [3, 8, 10]);
            assert_eq!(array(vec![], vec![(8, 1)]), Vec::<u64>::new());
            // Users, accounts, partitions, states, names.
            let users = ids(&q(JobQuery {
                users: vec!["u1".into(), "u3".into()],
                ..JobQuery::default()
            }));
            assert_eq!(
                users,
                [1, 3, 6, 8, 11, 13, 16, 18, 21, 23, 26, 28, 31, 33, 36, 38]
            );
            let some = ids(&q(JobQuery {
                accounts: vec!["acct0".into()],
                partitions: vec!["even".into()],
                ..JobQuery::default()
            }));
            assert_eq!(some, [6, 12, 18, 24, 30, 36]);
            let failed = ids(&q(JobQuery {
                states: vec!["FAILED".into(), "RUNNING".into()],
                ..JobQuery::default()
            }));
            assert_eq!(failed, [10, 20, 30, 40]);
            let named = ids(&q(JobQuery {
                names: vec!["n3".into()],
                users: vec!["u2".into()],
                ..JobQuery::default()
            }));
            assert_eq!(named, [7, 27]);
            // The window: ended since 35 or not yet, submitted by 37.
            let window = q(JobQuery {
                ended_since: Some(35),
                submitted_by: Some(37),
                runs: true,
                ..JobQuery::default()
            });
            assert_eq!(ids(&window), [20, 35, 36, 37, 38]);
            assert_eq!(window.steps.len(), 5);
            assert_eq!(
                window.runs,
                [Row {
                    id: 20,
                    step: Some(0),
                    record: "run 20.0".into()
                }]
            );
            // Everything.
            assert_eq!(ids(&q(JobQuery::default())), (1..=40).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_rewritten_record_moves_with_its_keys() {
        for at in crate::tests::locations("rewrite") {
            let (store, _w) = history(&at, 5);
            let running = |store: &Store| {
                ids(&store
                    .query_jobs(&JobQuery {
                        states: vec!["RUNNING".into()],
                        ended_since: Some(100),
                        ..JobQuery::default()
                    })
                    .unwrap())
            };
            let r = "job 3 user=u3 state=RUNNING".to_string();
            store.put_job_later(3, crate::tests::keys(&r), r);
            assert_eq!(running(&store), [3]);
            let r = "job 3 user=u3 state=COMPLETED end=200".to_string();
            store
                .put_job(3, crate::tests::keys(&r), r)
                .recv()
                .unwrap()
                .unwrap();
            assert_eq!(running(&store), Vec::<u64>::new());
        }
    }

    #[test]
    fn a_query_answers_from_disk_while_a_write_is_held_up() {
        let (store, _w) = history(&crate::Location::Sqlite(temp("held")), 3);
        // The writer is held up (as by a disk that stalls) with job 4's record queued.
        let held = store.hold_writes();
        let r = "job 4 user=u4 state=COMPLETED end=4".to_string();
        let written = store.put_job(4, crate::tests::keys(&r), r);
        // sacct -j 2,4 meanwhile: answered from what is on disk.
        let store = std::sync::Arc::new(store);
        let reader = store.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(reader.query_jobs(&JobQuery {
                jobs: vec![2, 4],
                ..JobQuery::default()
            }));
        });
        let found = rx
            .recv_timeout(std::time::Duration::from_secs(3))
            .expect("the query waited for the held write")
            .unwrap();
        assert_eq!(ids(&found), [2]);
        if let Ok(r) = written.try_recv() {
            panic!("the write is not held: {r:?}");
        }
        // Once the writer goes on, the write lands and the next query sees it.
        drop(held);
        written.recv().unwrap().unwrap();
        let after = store
            .query_jobs(&JobQuery {
                jobs: vec![2, 4],
                ..JobQuery::default()
            })
            .unwrap();
        assert_eq!(ids(&after), [2, 4]);
    }

    /// How SQLite would run `q`: the plan's lines.
    fn plan(store: &Store, q: &JobQuery) -> String {
        let crate::Location::Sqlite(path) = store.location() else {
            unreachable!("SQLite's plans")
        };
        let conn = Connection::open(path).unwrap();
        let (sql, args) = select(q);
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let lines: Vec<String> = stmt
            .query_map(params_from_iter(args), |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        lines.join("\n")
    }

    #[test]
    fn sacct_queries_search_indexes_instead_of_scanning_the_jobs() {
        let (store, _w) = history(&crate::Location::Sqlite(temp("plans")), 200);
        // ANALYZE as a site's database would have it: the plan must hold either way.
        for analyzed in [false, true] {
            if analyzed {
                let crate::Location::Sqlite(path) = store.location() else {
                    unreachable!("SQLite's plans")
                };
                let conn = Connection::open(path).unwrap();
                conn.execute_batch("ANALYZE").unwrap();
            }
            let cases = [
                (
                    "sacct -j 12",
                    JobQuery {
                        jobs: vec![12],
                        ..JobQuery::default()
                    },
                    vec!["INTEGER PRIMARY KEY", "jobs_array"],
                ),
                (
                    "sacct -j 7_2",
                    JobQuery {
                        tasks: vec![(7, 2)],
                        ..JobQuery::default()
                    },
                    vec!["jobs_array"],
                ),
                (
                    "sacct -u u1 -S 150",
                    JobQuery {
                        users: vec!["u1".into()],
                        ended_since: Some(150),
                        ..JobQuery::default()
                    },
                    vec!["jobs_user (user=? AND ended>?)"],
                ),
                (
                    "sacct -a (since midnight)",
                    JobQuery {
                        ended_since: Some(190),
                        ..JobQuery::default()
                    },
                    vec!["jobs_ended (ended>?)"],
                ),
                (
                    "sacct -a -s FAILED -S 150",
                    JobQuery {
                        states: vec!["FAILED".into()],
                        ended_since: Some(150),
                        ..JobQuery::default()
                    },
                    vec!["USING INDEX jobs_"],
                ),
            ];
            for (what, q, uses) in cases {
                let p = plan(&store, &q);
                assert!(!p.contains("SCAN jobs"), "{what} scans the jobs:\n{p}");
                for u in uses {
                    assert!(p.contains(u), "{what} does not use {u}:\n{p}");
                }
            }
        }
    }
}
