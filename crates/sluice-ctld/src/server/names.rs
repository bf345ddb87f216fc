//! Names of users and groups from the system's user database (`getpwuid`,
//! `getgrgid`), kept for a few seconds. Each request names its caller's user and group
//! (a submission's `UserId`/`GroupId`, the audit trail, the REST answers), and the
//! database is a file read (or a directory service asked) per lookup: a storm of
//! submissions by one user looked the same two names up thousands of times a second.
//! An answer is kept [`KEPT`], so that a user added, renamed or removed is seen within
//! that; `scontrol reconfigure` forgets them all at once ([`forget`]), as Slurm's own
//! cache of names is read again then.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an answer of the user database is used before it is asked again.
pub const KEPT: Duration = Duration::from_secs(10);

/// At most this many answers are kept; past it the cache starts afresh.
const MOST: usize = 4096;

/// Answers by id, each with when it was asked; `None`: no such id.
struct Cache(Mutex<BTreeMap<u32, (Option<String>, Instant)>>);

impl Cache {
    const fn new() -> Self {
        Cache(Mutex::new(BTreeMap::new()))
    }

    /// The name of `id`, asking `look_up` unless a recent answer is kept. A lookup
    /// that failed (a directory service that did not answer) is not kept: the next
    /// request asks again.
    fn name(
        &self,
        id: u32,
        now: Instant,
        look_up: impl FnOnce(u32) -> Result<Option<String>, ()>,
    ) -> Option<String> {
        if let Some((name, at)) = self.lock().get(&id) {
            if now.saturating_duration_since(*at) < KEPT {
                return name.clone();
            }
        }
        // Asked without the lock held: a slow directory service holds up nobody else.
        let name = look_up(id).ok()?;
        let mut kept = self.lock();
        if kept.len() >= MOST {
            kept.clear();
        }
        kept.insert(id, (name.clone(), now));
        name
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, (Option<String>, Instant)>> {
        // A panic elsewhere cannot leave a half-written map: entries are whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

static USERS: Cache = Cache::new();
static GROUPS: Cache = Cache::new();

/// Forgets every answer kept (`scontrol reconfigure`: names are read again).
pub fn forget() {
    USERS.lock().clear();
    GROUPS.lock().clear();
}

/// The name of user `uid`, if the user database has one.
pub fn user(uid: u32) -> Option<String> {
    USERS.name(uid, Instant::now(), |uid| {
        nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .map(|u| u.map(|u| u.name))
            .map_err(drop)
    })
}

/// The name of group `gid`, if the user database has one.
pub fn group(gid: u32) -> Option<String> {
    GROUPS.name(gid, Instant::now(), |gid| {
        nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
            .map(|g| g.map(|g| g.name))
            .map_err(drop)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn an_answer_is_used_for_a_while_then_asked_again() {
        let cache = Cache::new();
        let asked = Cell::new(0);
        let names = ["alice", "alicia"];
        let look_up = |_| {
            asked.set(asked.get() + 1);
            Ok(Some(names[asked.get() - 1].to_string()))
        };
        let t0 = Instant::now();
        assert_eq!(cache.name(1000, t0, look_up).as_deref(), Some("alice"));
        // Within KEPT the kept answer, without asking.
        let soon = t0 + KEPT - Duration::from_millis(1);
        assert_eq!(cache.name(1000, soon, look_up).as_deref(), Some("alice"));
        assert_eq!(asked.get(), 1);
        // After it the database again: the user was renamed meanwhile.
        assert_eq!(
            cache.name(1000, t0 + KEPT, look_up).as_deref(),
            Some("alicia")
        );
        assert_eq!(asked.get(), 2);
    }

    #[test]
    fn no_such_id_is_kept_too_and_ids_are_apart() {
        let cache = Cache::new();
        let asked = Cell::new(0);
        let look_up = |id: u32| {
            asked.set(asked.get() + 1);
            Ok((id == 1).then(|| "one".to_string()))
        };
        let t0 = Instant::now();
        assert_eq!(cache.name(7, t0, look_up), None);
        assert_eq!(cache.name(7, t0, look_up), None);
        assert_eq!(cache.name(1, t0, look_up).as_deref(), Some("one"));
        assert_eq!(asked.get(), 2);
    }

    #[test]
    fn a_failed_lookup_is_not_kept() {
        // A directory service that did not answer says nothing of the user: asked
        // again at the next request, which finds the name.
        let cache = Cache::new();
        let t0 = Instant::now();
        assert_eq!(cache.name(1000, t0, |_| Err(())), None);
        let found = cache.name(1000, t0, |_| Ok(Some("alice".to_string())));
        assert_eq!(found.as_deref(), Some("alice"));
    }

    #[test]
    fn root_is_named_from_the_user_database() {
        assert_eq!(user(0).as_deref(), Some("root"));
        assert_eq!(group(0).as_deref(), Some("root"));
    }
}
