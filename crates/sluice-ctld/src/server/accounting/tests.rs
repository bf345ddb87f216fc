//! Accounting read from a database written before the store indexed jobs.

use std::path::PathBuf;

use sluice_proto::types::{JobRecord, JobState, StepRecord};
use sluice_store::{JobQuery, Store};

use super::keys_of_record;

/// A copy of `fixtures/schema0.db`: the database a controller of schema version 0
/// wrote (`sluice up`, slurm.conf with partitions `batch` and `other`, all as root):
/// 1 `one` COMPLETED; 2 `two` FAILED in `other`; 3 an array `arr` of tasks 1-3 (jobs
/// 4, 5 and, its last, 3); 6 `steps` FAILED with steps `batch` and 0; 7 `long` CANCELLED; 8 `held`
/// PENDING; 9 `rq` requeued once (run 0 REQUEUED), then CANCELLED. Environments were
/// cut to `PATH` and `HOME`; the audit trail emptied.
fn schema0(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-acct-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("sluice.db");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/schema0.db"),
        &db,
    )
    .unwrap();
    db
}

#[test]
fn a_database_of_the_first_schema_is_upgraded_and_answers_sacct_by_index() {
    let db = schema0("upgrade");
    let (store, _w, snap) = Store::open(&db, 1, keys_of_record).unwrap();
    // Nothing lost: every record, step and run, readable as before.
    assert_eq!(snap.jobs.len(), 9);
    assert_eq!(snap.steps.len(), 9);
    assert_eq!(snap.runs.len(), 1);
    assert_eq!(snap.next_job_id, 10);
    for r in &snap.jobs {
        serde_json::from_str::<JobRecord>(&r.record).unwrap();
    }
    let ids = |q: JobQuery| -> Vec<u64> {
        store
            .query_jobs(&q)
            .unwrap()
            .jobs
            .iter()
            .map(|r| serde_json::from_str::<JobRecord>(&r.record).unwrap().id)
            .collect()
    };
    let q = JobQuery::default;
    assert_eq!(
        ids(JobQuery {
            jobs: vec![3],
            ..q()
        }),
        [3, 4, 5],
        "an array's id selects its tasks"
    );
    assert_eq!(
        ids(JobQuery {
            tasks: vec![(3, 2)],
            ..q()
        }),
        [5]
    );
    assert_eq!(
        ids(JobQuery {
            states: vec![JobState::Failed.name().into()],
            ..q()
        }),
        [2, 6]
    );
    assert_eq!(
        ids(JobQuery {
            partitions: vec!["other".into()],
            ..q()
        }),
        [2]
    );
    assert_eq!(
        ids(JobQuery {
            names: vec!["arr".into(), "held".into()],
            users: vec!["root".into()],
            accounts: vec!["root".into()],
            ..q()
        }),
        [3, 4, 5, 8]
    );
    // The pending job has not ended: it is in every window.
    assert_eq!(
        ids(JobQuery {
            ended_since: Some(i64::MAX - 1),
            ..q()
        }),
        [8]
    );
    // A job's steps and, with -D, its earlier runs.
    let found = store
        .query_jobs(&JobQuery {
            jobs: vec![6, 9],
            runs: true,
            ..q()
        })
        .unwrap();
    let steps: Vec<String> = found
        .steps
        .iter()
        .map(|r| {
            let s: StepRecord = serde_json::from_str(&r.record).unwrap();
            format!("{}.{}", s.job_id, s.step)
        })
        .collect();
    assert_eq!(steps, ["6.0", "6.batch", "9.batch"]);
    let run: JobRecord = serde_json::from_str(&found.runs[0].record).unwrap();
    assert_eq!((run.id, run.state), (9, JobState::Requeued));
}

#[test]
fn a_records_keys_are_what_sacct_selects_it_by() {
    let db = schema0("keys");
    let (_s, _w, snap) = Store::open(&db, 1, keys_of_record).unwrap();
    let task = snap.jobs.iter().find(|r| r.id == 5).unwrap();
    let k = keys_of_record(&task.record);
    assert_eq!((k.array_job, k.array_task), (Some(3), Some(2)));
    assert_eq!(
        (&k.user[..], &k.account[..], &k.partition[..], &k.name[..]),
        ("root", "root", "batch", "arr")
    );
    assert_eq!(k.state, "COMPLETED");
    assert!(k.end.is_some_and(|e| e >= k.submit));
    let pending = snap.jobs.iter().find(|r| r.id == 8).unwrap();
    assert_eq!(keys_of_record(&pending.record).end, None);
    assert_eq!(
        keys_of_record("not a record"),
        sluice_store::JobKeys::default()
    );
}
