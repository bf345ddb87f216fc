//! Listings written once for every caller who asks for the same thing in the same
//! second: `GET jobs` of 10,000 jobs is megabytes of JSON, and 32 clients polling it
//! (a dashboard per user, exporters) would otherwise write it 32 times per snapshot,
//! taking the processors from everything else the controller answers — the reason
//! SchedMD tells sites to put a caching proxy in front of slurmrestd.
//!
//! An entry is the JSON of one listing for one published snapshot, one view
//! (everything, or one owner's jobs under `PrivateData`) and one second (the
//! listing's `now`: what `MinJobAge` leaves in it); a new snapshot or the next second
//! writes it anew, so an answer is never staler than a listing written for it then.
//! The snapshot is held weakly: the entry never keeps an old snapshot alive, and its
//! address cannot be taken by a newer one while the entry exists.

use std::sync::{Arc, Mutex, Weak};

use serde_json::value::RawValue;

/// How many views are kept (each user under `PrivateData` is one).
const ENTRIES: usize = 16;

struct Entry<S> {
    snapshot: Weak<S>,
    view: Option<u32>,
    now: i64,
    json: Arc<RawValue>,
}

/// The listings written lately, of snapshots of type `S`.
pub struct SharedLists<S> {
    entries: Mutex<Vec<Entry<S>>>,
}

impl<S> Default for SharedLists<S> {
    fn default() -> Self {
        SharedLists {
            entries: Mutex::new(Vec::new()),
        }
    }
}

impl<S> SharedLists<S> {
    /// The JSON of `snapshot`'s listing for `view` at `now`: the one written before, or
    /// `write`'s (then kept for the callers that follow).
    pub fn get_or_write(
        &self,
        snapshot: &Arc<S>,
        view: Option<u32>,
        now: i64,
        write: impl FnOnce() -> String,
    ) -> Arc<RawValue> {
        let same = |e: &Entry<S>| {
            e.view == view
                && e.now == now
                && std::ptr::eq(e.snapshot.as_ptr(), Arc::as_ptr(snapshot))
        };
        if let Some(e) = self.lock().iter().find(|e| same(e)) {
            return e.json.clone();
        }
        // Written outside the lock: a caller of another view does not wait for it.
        let json: Arc<RawValue> = RawValue::from_string(write())
            .expect("a listing is JSON")
            .into();
        let mut entries = self.lock();
        entries.retain(|e| e.snapshot.strong_count() > 0 && !same(e));
        if entries.len() >= ENTRIES {
            entries.remove(0);
        }
        entries.push(Entry {
            snapshot: Arc::downgrade(snapshot),
            view,
            now,
            json: json.clone(),
        });
        json
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry<S>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_written_once_per_snapshot_view_and_second() {
        let lists = SharedLists::default();
        let writes = std::cell::Cell::new(0);
        let write = |text: &str| {
            writes.set(writes.get() + 1);
            text.to_string()
        };
        let first = Arc::new(1u8);
        let a = lists.get_or_write(&first, None, 100, || write("[1]"));
        let b = lists.get_or_write(&first, None, 100, || write("[2]"));
        assert_eq!((a.get(), b.get(), writes.get()), ("[1]", "[1]", 1));
        // Another owner's view, the next second, a new snapshot: written anew.
        assert_eq!(
            lists
                .get_or_write(&first, Some(7), 100, || write("[7]"))
                .get(),
            "[7]"
        );
        assert_eq!(
            lists.get_or_write(&first, None, 101, || write("[3]")).get(),
            "[3]"
        );
        let second = Arc::new(2u8);
        assert_eq!(
            lists
                .get_or_write(&second, None, 101, || write("[4]"))
                .get(),
            "[4]"
        );
        assert_eq!(writes.get(), 4);
        // A dropped snapshot's entries go at the next write; the cache stays bounded.
        drop(first);
        for v in 0..40 {
            lists.get_or_write(&second, Some(v), 101, || write("[]"));
        }
        assert!(lists.lock().len() <= ENTRIES);
        assert!(lists.lock().iter().all(|e| e.snapshot.strong_count() > 0));
    }
}
