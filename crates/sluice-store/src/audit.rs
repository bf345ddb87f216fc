//! The audit trail: every scheduling decision with its cause, and who held which device
//! when.
//!
//! Two tables:
//!
//! - `audit`: one row per event — `seq` (the order of recording, never reused), `time`
//!   (Unix seconds), `job_id`, `uid` (the job's owner, for privacy), `kind` and `detail`
//!   (the controller's JSON; this crate does not interpret it). Indexed by job (a job's
//!   story) and by time (a window, the retention purge).
//! - `audit_holds`: one row per device a job run held — `node`, `gpu` (the GPU index;
//!   `NULL` for a node on which the job held no GPU), `start_time`, `end_time` (`NULL`
//!   while held) and `start_seq`, the event that started it (the cause). Indexed by
//!   device and start, so that "who held node03's GPU 5 when" reads only that device's
//!   rows.
//!
//! Records are written by the store's writer thread in the same group-commit
//! transactions as everything else, without anyone waiting for them
//! ([`crate::Store::audit`]); a scheduling pass never waits on the disk for its audit
//! trail.

use rusqlite::{params, Connection, Transaction};

/// What an audit record does to the device holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HoldChange {
    /// Nothing.
    #[default]
    None,
    /// Run `run` of the job starts holding `devices`: `(node, GPU index)`, `None` for a
    /// node on which it holds no GPU.
    Take {
        /// The run (the job's restart count).
        run: u32,
        /// The devices.
        devices: Vec<(String, Option<u32>)>,
    },
    /// Run `run` of the job lets go of everything it held, at the record's time.
    Release {
        /// The run.
        run: u32,
    },
}

/// An event to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRecord {
    /// When, Unix seconds.
    pub time: i64,
    /// The job.
    pub job_id: u64,
    /// The job's owner.
    pub uid: u32,
    /// What happened (the controller's name).
    pub kind: String,
    /// The details, as JSON.
    pub detail: String,
    /// Devices taken or let go.
    pub holds: HoldChange,
}

/// An event as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRow {
    /// Order of recording (increasing, never reused).
    pub seq: i64,
    /// When, Unix seconds.
    pub time: i64,
    /// The job.
    pub job_id: u64,
    /// The job's owner.
    pub uid: u32,
    /// What happened.
    pub kind: String,
    /// The details, as JSON.
    pub detail: String,
}

/// A device held by a job run for an interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldRow {
    /// The job.
    pub job_id: u64,
    /// The run.
    pub run: u32,
    /// The node.
    pub node: String,
    /// The GPU index; `None`: the node, without a GPU.
    pub gpu: Option<u32>,
    /// Held from, Unix seconds.
    pub start: i64,
    /// Held until (exclusive); `None` while still held.
    pub end: Option<i64>,
    /// The job's owner.
    pub uid: u32,
    /// The event that started the run (its cause), unless purged.
    pub cause: Option<AuditRow>,
}

/// Which events to read: all of one job, or all, in a time window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this job's.
    pub job: Option<u64>,
    /// At or after this time (Unix seconds).
    pub since: Option<i64>,
    /// Before this time.
    pub until: Option<i64>,
}

/// Which holds to read: those of one node (one GPU of it) that overlap a window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HoldFilter {
    /// The node.
    pub node: String,
    /// Only this GPU index.
    pub gpu: Option<u32>,
    /// Only this job's.
    pub job: Option<u64>,
    /// Held at some time at or after this (Unix seconds).
    pub since: Option<i64>,
    /// Held at some time before this.
    pub until: Option<i64>,
}

pub(crate) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL,
        job_id INTEGER NOT NULL, uid INTEGER NOT NULL, kind TEXT NOT NULL,
        detail TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS audit_by_job ON audit (job_id, seq);
    CREATE INDEX IF NOT EXISTS audit_by_time ON audit (time);
    CREATE TABLE IF NOT EXISTS audit_holds (
        job_id INTEGER NOT NULL, run INTEGER NOT NULL, node TEXT NOT NULL, gpu INTEGER,
        start_time INTEGER NOT NULL, end_time INTEGER, uid INTEGER NOT NULL,
        start_seq INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS audit_holds_by_device ON audit_holds (node, gpu, start_time);
    CREATE INDEX IF NOT EXISTS audit_holds_by_job ON audit_holds (job_id, run);
    CREATE INDEX IF NOT EXISTS audit_holds_by_end ON audit_holds (end_time);
";

/// Writes `records` in the writer's transaction.
pub(crate) fn write(tx: &Transaction, records: &[AuditRecord]) -> rusqlite::Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO audit (time, job_id, uid, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut take = tx.prepare_cached(
        "INSERT INTO audit_holds (job_id, run, node, gpu, start_time, uid, start_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut release = tx.prepare_cached(
        "UPDATE audit_holds SET end_time = ?3
         WHERE job_id = ?1 AND run = ?2 AND end_time IS NULL",
    )?;
    for r in records {
        insert.execute(params![
            r.time,
            r.job_id as i64,
            r.uid,
            r.kind.as_str(),
            r.detail.as_str()
        ])?;
        let seq = tx.last_insert_rowid();
        match &r.holds {
            HoldChange::None => {}
            HoldChange::Take { run, devices } => {
                for (node, gpu) in devices {
                    take.execute(params![
                        r.job_id as i64,
                        run,
                        node.as_str(),
                        gpu,
                        r.time,
                        r.uid,
                        seq
                    ])?;
                }
            }
            HoldChange::Release { run } => {
                release.execute(params![r.job_id as i64, run, r.time])?;
            }
        }
    }
    Ok(())
}

/// Deletes up to `limit` events recorded before `before`, and up to `limit` holds that
/// ended before it; how many rows went.
pub(crate) fn purge(tx: &Transaction, before: i64, limit: u64) -> rusqlite::Result<u64> {
    let events = tx.execute(
        "DELETE FROM audit WHERE seq IN
         (SELECT seq FROM audit WHERE time < ?1 ORDER BY time LIMIT ?2)",
        params![before, limit as i64],
    )?;
    let holds = tx.execute(
        "DELETE FROM audit_holds WHERE rowid IN
         (SELECT rowid FROM audit_holds WHERE end_time < ?1 ORDER BY end_time LIMIT ?2)",
        params![before, limit as i64],
    )?;
    Ok((events + holds) as u64)
}

fn event_row(r: &rusqlite::Row, at: usize) -> rusqlite::Result<AuditRow> {
    Ok(AuditRow {
        seq: r.get(at)?,
        time: r.get(at + 1)?,
        job_id: r.get::<_, i64>(at + 2)? as u64,
        uid: r.get(at + 3)?,
        kind: r.get(at + 4)?,
        detail: r.get(at + 5)?,
    })
}

/// The events `filter` selects, in the order they were recorded.
pub(crate) fn events(conn: &Connection, filter: &AuditFilter) -> rusqlite::Result<Vec<AuditRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, time, job_id, uid, kind, detail FROM audit
         WHERE (?1 IS NULL OR job_id = ?1) AND (?2 IS NULL OR time >= ?2)
           AND (?3 IS NULL OR time < ?3)
         ORDER BY seq",
    )?;
    let rows = stmt.query_map(
        params![filter.job.map(|j| j as i64), filter.since, filter.until],
        |r| event_row(r, 0),
    )?;
    rows.collect()
}

/// The holds `filter` selects, by start time then job, each with the event that
/// started it.
pub(crate) fn holds(conn: &Connection, filter: &HoldFilter) -> rusqlite::Result<Vec<HoldRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT h.job_id, h.run, h.node, h.gpu, h.start_time, h.end_time, h.uid,
                a.seq, a.time, a.job_id, a.uid, a.kind, a.detail
         FROM audit_holds h LEFT JOIN audit a ON a.seq = h.start_seq
         WHERE h.node = ?1 AND (?2 IS NULL OR h.gpu = ?2) AND (?3 IS NULL OR h.job_id = ?3)
           AND (?5 IS NULL OR h.start_time < ?5)
           AND (?4 IS NULL OR h.end_time IS NULL OR h.end_time > ?4)
         ORDER BY h.start_time, h.job_id, h.run, h.gpu",
    )?;
    let rows = stmt.query_map(
        params![
            filter.node.as_str(),
            filter.gpu,
            filter.job.map(|j| j as i64),
            filter.since,
            filter.until
        ],
        |r| {
            let cause = match r.get::<_, Option<i64>>(7)? {
                Some(_) => Some(event_row(r, 7)?),
                None => None,
            };
            Ok(HoldRow {
                job_id: r.get::<_, i64>(0)? as u64,
                run: r.get(1)?,
                node: r.get(2)?,
                gpu: r.get(3)?,
                start: r.get(4)?,
                end: r.get(5)?,
                uid: r.get(6)?,
                cause,
            })
        },
    )?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    fn record(time: i64, job: u64, kind: &str, holds: HoldChange) -> AuditRecord {
        AuditRecord {
            time,
            job_id: job,
            uid: 1000 + job as u32,
            kind: kind.into(),
            detail: format!("{{\"n\":{time}}}"),
            holds,
        }
    }

    fn take(run: u32, devices: &[(&str, Option<u32>)]) -> HoldChange {
        HoldChange::Take {
            run,
            devices: devices.iter().map(|(n, g)| (n.to_string(), *g)).collect(),
        }
    }

    /// Job 1 holds node03's GPUs 4 and 5 from 100 to 200, is requeued, and its second
    /// run holds GPU 5 from 300 on; job 2 holds GPU 5 from 200 to 300; job 3 ran on
    /// node01 without GPUs.
    fn story(store: &Store) {
        store.audit(vec![
            record(90, 1, "submitted", HoldChange::None),
            record(
                100,
                1,
                "started",
                take(0, &[("node03", Some(4)), ("node03", Some(5))]),
            ),
            record(150, 3, "started", take(0, &[("node01", None)])),
        ]);
        store.audit(vec![
            record(200, 1, "requeued", HoldChange::Release { run: 0 }),
            record(200, 2, "started", take(0, &[("node03", Some(5))])),
            record(250, 3, "ended", HoldChange::Release { run: 0 }),
            record(300, 2, "ended", HoldChange::Release { run: 0 }),
            record(300, 1, "started", take(1, &[("node03", Some(5))])),
        ]);
    }

    #[test]
    fn events_are_read_back_by_job_and_by_window_in_recording_order() {
        for path in crate::tests::locations("events") {
            let (store, _writer, _) = Store::open_at(&path, 1, crate::tests::keys).unwrap();
            story(&store);
            let of_job = |job| {
                store
                    .audit_events(&AuditFilter {
                        job: Some(job),
                        ..Default::default()
                    })
                    .unwrap()
                    .into_iter()
                    .map(|r| (r.seq, r.time, r.kind, r.uid, r.detail))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                of_job(1),
                vec![
                    (1, 90, "submitted".into(), 1001, "{\"n\":90}".into()),
                    (2, 100, "started".into(), 1001, "{\"n\":100}".into()),
                    (4, 200, "requeued".into(), 1001, "{\"n\":200}".into()),
                    (8, 300, "started".into(), 1001, "{\"n\":300}".into()),
                ]
            );
            let window = store
                .audit_events(&AuditFilter {
                    job: None,
                    since: Some(150),
                    until: Some(300),
                })
                .unwrap();
            assert_eq!(
                window
                    .iter()
                    .map(|r| (r.time, r.job_id))
                    .collect::<Vec<_>>(),
                vec![(150, 3), (200, 1), (200, 2), (250, 3)],
                "since is inclusive, until exclusive"
            );
        }
    }

    #[test]
    fn holds_say_who_held_a_gpu_when_with_the_start_that_caused_it() {
        for path in crate::tests::locations("holds") {
            let (store, _writer, _) = Store::open_at(&path, 1, crate::tests::keys).unwrap();
            story(&store);
            let held = |gpu: Option<u32>, since: Option<i64>, until: Option<i64>| {
                store
                    .audit_holds(&HoldFilter {
                        node: "node03".into(),
                        gpu,
                        job: None,
                        since,
                        until,
                    })
                    .unwrap()
                    .into_iter()
                    .map(|h| {
                        (
                            h.job_id,
                            h.run,
                            h.gpu,
                            h.start,
                            h.end,
                            h.cause.map(|c| c.seq),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                held(Some(5), None, None),
                vec![
                    (1, 0, Some(5), 100, Some(200), Some(2)),
                    (2, 0, Some(5), 200, Some(300), Some(5)),
                    (1, 1, Some(5), 300, None, Some(8)),
                ]
            );
            // Half-open intervals: [200, 300) overlaps neither [100, 200) nor [300, ...).
            assert_eq!(
                held(Some(5), Some(200), Some(300)),
                vec![(2, 0, Some(5), 200, Some(300), Some(5))]
            );
            assert_eq!(
                held(None, Some(120), Some(130)),
                vec![
                    (1, 0, Some(4), 100, Some(200), Some(2)),
                    (1, 0, Some(5), 100, Some(200), Some(2))
                ]
            );
            let node01 = store
                .audit_holds(&HoldFilter {
                    node: "node01".into(),
                    ..Default::default()
                })
                .unwrap();
            assert_eq!(
                node01
                    .iter()
                    .map(|h| (h.job_id, h.gpu, h.start, h.end))
                    .collect::<Vec<_>>(),
                vec![(3, None, 150, Some(250))]
            );
        }
    }

    #[test]
    fn the_purge_takes_old_events_and_ended_holds_in_batches_and_keeps_open_ones() {
        for path in crate::tests::locations("purge") {
            let (store, writer, _) = Store::open_at(&path, 1, crate::tests::keys).unwrap();
            story(&store);
            // Before 260: 6 events (90, 100, 150, 200, 200, 250) and 3 holds ended by then
            // (job 1's two, job 3's); two rows at a time.
            let mut batches = Vec::new();
            loop {
                let n = store.purge_audit(260, 2).recv().unwrap().unwrap();
                batches.push(n);
                if n < 2 {
                    break;
                }
            }
            assert_eq!(batches, vec![4, 3, 2, 0]);
            drop(store);
            drop(writer);
            let (store, _writer, _) = Store::open_at(&path, 1, crate::tests::keys).unwrap();
            let left = store.audit_events(&AuditFilter::default()).unwrap();
            assert_eq!(
                left.iter().map(|r| (r.seq, r.time)).collect::<Vec<_>>(),
                vec![(7, 300), (8, 300)]
            );
            let gpu5 = store
                .audit_holds(&HoldFilter {
                    node: "node03".into(),
                    gpu: Some(5),
                    ..Default::default()
                })
                .unwrap();
            // Job 2's hold ended at 300 and stays; its cause (seq 5, at 200) is gone.
            assert_eq!(
                gpu5.iter()
                    .map(|h| (h.job_id, h.start, h.end, h.cause.as_ref().map(|c| c.seq)))
                    .collect::<Vec<_>>(),
                vec![(2, 200, Some(300), None), (1, 300, None, Some(8))]
            );
            // New events never reuse a purged sequence number.
            store.audit(vec![record(400, 4, "submitted", HoldChange::None)]);
            let last = store.audit_events(&AuditFilter::default()).unwrap();
            assert_eq!(last.last().map(|r| r.seq), Some(9));
        }
    }
}
