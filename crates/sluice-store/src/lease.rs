//! Which of several controllers is the active one (a backup controller's takeover),
//! on PostgreSQL: the active controller holds a session advisory lock of its cluster
//! on a connection of its own — its **lease** — and took over with a **fencing epoch**
//! (the cluster's row of `meta`, [`epoch_key`], incremented at every takeover; clusters
//! sharing a database fence each other never). Every write of its store is
//! conditioned on that epoch ([`crate::Fence`]), so a controller that lost its lease
//! (paused, cut off) and has not noticed yet can change nothing once another has taken
//! over.
//!
//! PostgreSQL frees a session's advisory locks when the session ends: at once when the
//! controller's process dies (its socket is closed), and for a host cut off or paused
//! when the server's TCP keepalives give up on it. The lease connection asks the server
//! for keepalives bounded by the controller's timeout (`SlurmctldTimeout`), and keeps
//! its own side bounded the same way, so that the active controller learns it lost its
//! lease about when a standby may take it.

use std::time::Duration;

use postgres::Client;

use crate::location::PgTarget;
use crate::pg;
use crate::StoreError;

/// The advisory lock's key for cluster `name` (one active controller per cluster).
pub fn lock_key(cluster: &str) -> i64 {
    // FNV-1a, 64 bits: stable across releases and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in b"sluice-controller:".iter().chain(cluster.as_bytes()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

/// The `meta` row that keeps cluster `cluster`'s fencing epoch.
pub fn epoch_key(cluster: &str) -> String {
    format!("epoch:{cluster}")
}

/// `target` with keepalives and timeouts on this side bounded by `timeout`.
fn bounded(target: &PgTarget, timeout: Duration) -> PgTarget {
    let (idle, interval, retries) = bounds(timeout);
    let half = (timeout / 2).max(Duration::from_secs(2));
    let mut t = target.clone();
    t.config
        .keepalives(true)
        .keepalives_idle(idle)
        .keepalives_interval(interval)
        .keepalives_retries(retries)
        .tcp_user_timeout(half)
        .connect_timeout(half);
    t
}

/// A lease connection to `t` (already [`bounded`]), the server's side of it bounded
/// by `timeout` too: a controller cut off is given up on, and its lock freed, within
/// the timeout.
fn open(t: &PgTarget, timeout: Duration) -> Result<Client, StoreError> {
    let (idle, interval, retries) = bounds(timeout);
    let half = (timeout / 2).max(Duration::from_secs(2));
    let mut client = pg::connect(t)?;
    client
        .batch_execute(&format!(
            "SET tcp_keepalives_idle = {}; SET tcp_keepalives_interval = {};
             SET tcp_keepalives_count = {retries}; SET tcp_user_timeout = {};",
            idle.as_secs(),
            interval.as_secs(),
            half.as_millis()
        ))
        .map_err(pg::error(t))?;
    Ok(client)
}

/// What taking the lease again after its connection was lost found
/// ([`Lease::take_again`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Again {
    /// The lock is this controller's again and the epoch is still the one it took over
    /// with: nothing changed hands (the database was restarted, or the connection
    /// broke), it stays the active controller.
    Ours,
    /// Another controller holds the lock, or took over meanwhile (the epoch now, when
    /// known): this one must step down.
    Lost(Option<i64>),
}

/// A connection that may hold a cluster's lease: a standby's (asking for the lock) or
/// the active controller's (holding it).
pub struct Lease {
    client: Client,
    target: PgTarget,
    /// `SlurmctldTimeout`, which bounds the connection's keepalives.
    timeout: Duration,
    key: i64,
    /// The cluster's epoch row ([`epoch_key`]).
    row: String,
    /// The epoch this controller took over with (0 until it holds the lock).
    epoch: i64,
}

/// The keepalive and timeout settings for `timeout` (`SlurmctldTimeout`): a peer
/// silent for about half of it is given up on.
fn bounds(timeout: Duration) -> (Duration, Duration, u32) {
    let half = (timeout / 2).max(Duration::from_secs(2));
    let idle = (half / 3).max(Duration::from_secs(1));
    (idle, Duration::from_secs(1), 2)
}

impl Lease {
    /// Connects to `target` for the lease of cluster `cluster`, with keepalives on both
    /// sides bounded by `timeout`; the database's schema is brought up to date first
    /// (`first_job_id` as for [`crate::Store::open_at`]).
    ///
    /// Errors: the server cannot be reached, or refuses.
    pub fn connect(
        target: &PgTarget,
        cluster: &str,
        timeout: Duration,
        first_job_id: u64,
    ) -> Result<Lease, StoreError> {
        let t = bounded(target, timeout);
        pg::off_runtime(|| {
            let mut client = open(&t, timeout)?;
            pg::migrate(&mut client, target, first_job_id)?;
            Ok(Lease {
                client,
                target: t.clone(),
                timeout,
                key: lock_key(cluster),
                row: epoch_key(cluster),
                epoch: 0,
            })
        })
    }

    /// Takes the lease if no other controller holds it: the lock, then the epoch
    /// incremented (which waits for the transactions of a former controller still
    /// under way, and makes any later one of its fail). `None`: another holds it.
    ///
    /// Errors: the connection failed (connect again).
    pub fn try_take(&mut self) -> Result<Option<i64>, StoreError> {
        let key = self.key;
        let row = self.row.clone();
        let target = self.target.clone();
        let client = &mut self.client;
        let taken = pg::off_runtime(|| {
            let e = pg::error(&target);
            let locked: bool = client
                .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                .map_err(&e)?
                .get(0);
            if !locked {
                return Ok(None);
            }
            let epoch: i64 = client
                .query_one(
                    "INSERT INTO meta (key, value) VALUES ($1, 1)
                     ON CONFLICT (key) DO UPDATE SET value = meta.value + 1 RETURNING value",
                    &[&row],
                )
                .map_err(&e)?
                .get(0);
            Ok::<_, StoreError>(Some(epoch))
        })?;
        if let Some(epoch) = taken {
            self.epoch = epoch;
        }
        Ok(taken)
    }

    /// The epoch this controller took over with (0: it does not hold the lease).
    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// The database's epoch now, read on the lease's connection: equal to
    /// [`Lease::epoch`] while this controller is the active one.
    ///
    /// Errors: the connection is lost (and with it the lock).
    pub fn current(&mut self) -> Result<i64, StoreError> {
        let target = self.target.clone();
        let row = self.row.clone();
        let client = &mut self.client;
        pg::off_runtime(|| {
            client
                .query_one("SELECT value FROM meta WHERE key = $1", &[&row])
                .map(|r| r.get(0))
                .map_err(pg::error(&target))
        })
    }

    /// Connects again and takes the lock again, after the lease's connection was lost
    /// (its lock with it) while this controller was the active one: see [`Again`]. The
    /// epoch is not incremented; a lock taken while the epoch is another's is given
    /// back.
    ///
    /// Errors: the server still cannot be reached (try again).
    pub fn take_again(&mut self) -> Result<Again, StoreError> {
        let key = self.key;
        let row = self.row.clone();
        let ours = self.epoch;
        let target = self.target.clone();
        let timeout = self.timeout;
        let (client, again) = pg::off_runtime(|| {
            let e = pg::error(&target);
            let mut client = open(&target, timeout)?;
            let locked: bool = client
                .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                .map_err(&e)?
                .get(0);
            if !locked {
                return Ok::<_, StoreError>((client, Again::Lost(None)));
            }
            let now: i64 = client
                .query_opt("SELECT value FROM meta WHERE key = $1", &[&row])
                .map_err(&e)?
                .map_or(0, |r| r.get(0));
            if now == ours {
                return Ok((client, Again::Ours));
            }
            client
                .execute("SELECT pg_advisory_unlock($1)", &[&key])
                .map_err(&e)?;
            Ok((client, Again::Lost(Some(now))))
        })?;
        let old = std::mem::replace(&mut self.client, client);
        pg::off_runtime(move || drop(old));
        Ok(again)
    }

    /// Gives the lease up now (a clean hand-over): the lock is released and the
    /// connection closed.
    pub fn release(mut self) {
        let key = self.key;
        let client = &mut self.client;
        pg::off_runtime(|| {
            let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&key]);
        });
        pg::off_runtime(move || drop(self));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_server::shared;
    use crate::tests::{keys, rows};
    use crate::{Fence, Location, Store};
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::Arc;

    #[test]
    fn one_controller_holds_the_lease_and_a_former_ones_writes_are_refused() {
        let Some(server) = shared("pg lease") else {
            return;
        };
        let target = server.database("t_pg_lease");
        let timeout = Duration::from_secs(10);
        let mut first = Lease::connect(&target, "c", timeout, 1).unwrap();
        let mut second = Lease::connect(&target, "c", timeout, 1).unwrap();
        let mut other_cluster = Lease::connect(&target, "d", timeout, 1).unwrap();
        let one = first.try_take().unwrap().expect("the first takes it");
        assert_eq!(second.try_take().unwrap(), None, "held by the first");
        assert_eq!(
            other_cluster.try_take().unwrap(),
            Some(1),
            "another cluster's"
        );
        assert_eq!(
            first.current().unwrap(),
            one,
            "each cluster has its own epoch"
        );
        let fenced = Arc::new(AtomicI64::new(0));
        let told = fenced.clone();
        let fence = |epoch| Fence {
            epoch,
            key: epoch_key("c"),
            on_fenced: Arc::new(move |now| told.store(now, Ordering::SeqCst)),
        };
        let at = Location::Postgres(Box::new(target.clone()));
        let (store, writer, _) = Store::open_fenced(&at, 1, keys, Some(fence(one))).unwrap();
        store
            .insert_jobs(1, rows(["job 1 user=a".to_string()]))
            .recv()
            .unwrap()
            .expect("the active controller writes");
        // The first controller dies: its lock goes with its session, the second takes
        // over with the next epoch.
        drop(first);
        let two = (0..50)
            .find_map(|_| {
                let t = second.try_take().unwrap();
                if t.is_none() {
                    std::thread::sleep(Duration::from_millis(100));
                }
                t
            })
            .expect("the lock is freed with the first's session");
        assert_eq!(two, one + 1);
        let e = store
            .insert_jobs(2, rows(["job 2 user=a".to_string()]))
            .recv()
            .unwrap()
            .expect_err("a former controller's write is refused");
        assert!(
            e.to_string().contains("another controller took over"),
            "{e}"
        );
        assert_eq!(fenced.load(Ordering::SeqCst), two, "told the new epoch");
        drop(store);
        drop(writer);
        let (_s, _w, snap) = Store::open_at(&at, 1, keys).unwrap();
        let ids: Vec<u64> = snap.jobs.iter().map(|r| r.id).collect();
        assert_eq!(
            ids,
            [1],
            "nothing of the former controller's after the takeover"
        );
        assert_eq!(second.current().unwrap(), two);
    }

    #[test]
    fn after_a_database_restart_the_lease_is_taken_again_unless_another_took_over() {
        let Some(server) = crate::pg_server::PgServer::start("pg lease again") else {
            return;
        };
        let target = server.database("t_pg_lease_again");
        let timeout = Duration::from_secs(10);
        let mut active = Lease::connect(&target, "c", timeout, 1).unwrap();
        let epoch = active.try_take().unwrap().expect("taken");
        // A restart: the lock went with the session, nothing changed hands.
        server.pause();
        assert!(active.current().is_err(), "the lease's connection is lost");
        assert!(active.take_again().is_err(), "not while the server is down");
        server.resume();
        assert_eq!(active.take_again().unwrap(), Again::Ours);
        assert_eq!(active.current().unwrap(), epoch, "the epoch is not bumped");
        let mut standby = Lease::connect(&target, "c", timeout, 1).unwrap();
        assert_eq!(standby.try_take().unwrap(), None, "the lock is held again");
        // Another restart, and this time the standby takes the lease first.
        server.pause();
        server.resume();
        let mut standby = Lease::connect(&target, "c", timeout, 1).unwrap();
        let newer = standby.try_take().unwrap().expect("the lock was free");
        assert_eq!(newer, epoch + 1);
        assert_eq!(active.take_again().unwrap(), Again::Lost(None));
        // Handed back (the standby stops): the lock is free, but the epoch is another's.
        standby.release();
        assert_eq!(active.take_again().unwrap(), Again::Lost(Some(newer)));
        let mut third = Lease::connect(&target, "c", timeout, 1).unwrap();
        assert_eq!(
            third.try_take().unwrap(),
            Some(newer + 1),
            "the lock a former controller found is not kept"
        );
    }
}
