//! `update_time`: a listing asked for "only if changed since" (Slurm's
//! `slurm_load_jobs(update_time, ...)` and its siblings). The answer's `last_update` is
//! when the collection last changed; a request whose `update_time` is not older gets
//! an empty list, with Slurm's warning that nothing changed.
//!
//! Jobs carry their own time (the published snapshot is stamped when a record
//! changes). Nodes, partitions and reservations are stamped here, when a listing
//! first sees them differ from the last one it answered (a digest of what it shows):
//! never earlier than the change itself, so a client passing back the `last_update`
//! it was given never misses one.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
use serde::Deserialize;
use serde_json::Value;

use super::envelope::{errno, Error};

/// A listing's query: `update_time` (Unix seconds), and Slurm's `flags`, which Sluice
/// answers in full whatever they say.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ListQuery {
    update_time: Option<String>,
    #[allow(dead_code)]
    flags: Option<String>,
}

/// The `update_time` asked for (`None`: absent or 0, everything).
///
/// Errors: a query that does not parse, or a time that is not a number, as Slurm's
/// `Rejecting request. Failure parsing query.`
pub(super) fn since(
    query: Result<Query<ListQuery>, QueryRejection>,
    source: &str,
) -> Result<Option<i64>, Error> {
    let bad = || {
        Error::new(
            errno::REST_INVALID_QUERY,
            "Rejecting request. Failure parsing query.",
            source,
        )
    };
    let Query(q) = query.map_err(|_| bad())?;
    match q.update_time.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) => {
            let t: i64 = t.parse().map_err(|_| bad())?;
            Ok((t > 0).then_some(t))
        }
    }
}

/// Whether a collection last changed at `last_update` is unchanged since `since`.
pub(super) fn unchanged(since: Option<i64>, last_update: i64) -> bool {
    since.is_some_and(|t| last_update <= t)
}

/// Slurm's warning for an unchanged collection (`what`: `job`, `node`, ...).
pub(super) fn warning(what: &str, since: i64) -> String {
    format!(
        "No {what} changes since update_time[{since}]={}",
        sluice_proto::time::timestamp(since)
    )
}

/// The digest last answered and when it was first seen, by controller incarnation
/// and collection.
type Seen = HashMap<(String, &'static str), (u64, i64)>;

fn seen() -> &'static Mutex<Seen> {
    static SEEN: OnceLock<Mutex<Seen>> = OnceLock::new();
    SEEN.get_or_init(Default::default)
}

/// When `collection` (as listed: `shown`) last changed, as far as listings saw: `now`
/// if it differs from the last one answered, else when that one was first seen.
pub(super) fn last_change(
    incarnation: &str,
    collection: &'static str,
    shown: &Value,
    now: i64,
) -> i64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    shown.to_string().hash(&mut h);
    let digest = h.finish();
    let mut seen = seen().lock().unwrap_or_else(|e| e.into_inner());
    let entry = seen
        .entry((incarnation.to_string(), collection))
        .or_insert((digest, now));
    if entry.0 != digest {
        *entry = (digest, now);
    }
    entry.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_collection_is_stamped_when_it_changes() {
        let a = json!([{"name": "n1", "state": ["IDLE"]}]);
        let b = json!([{"name": "n1", "state": ["IDLE", "DRAIN"]}]);
        assert_eq!(last_change("t1", "nodes", &a, 100), 100);
        assert_eq!(last_change("t1", "nodes", &a, 150), 100);
        assert_eq!(last_change("t1", "nodes", &b, 160), 160);
        assert_eq!(last_change("t1", "nodes", &b, 170), 160);
        // Another collection, another controller: their own times.
        assert_eq!(last_change("t1", "partitions", &a, 180), 180);
        assert_eq!(last_change("t2", "nodes", &a, 190), 190);
        assert!(unchanged(Some(160), 160));
        assert!(!unchanged(Some(159), 160));
        assert!(!unchanged(None, 160));
    }

    #[test]
    fn update_time_is_a_number() {
        let q = |s: &str| {
            let uri: axum::http::Uri = format!("/x?{s}").parse().unwrap();
            since(Query::try_from_uri(&uri), "s")
        };
        assert_eq!(q("update_time=42").unwrap(), Some(42));
        assert_eq!(q("update_time=0").unwrap(), None);
        assert_eq!(q("").unwrap(), None);
        assert_eq!(
            q("update_time=soon").unwrap_err().number,
            errno::REST_INVALID_QUERY
        );
    }
}
