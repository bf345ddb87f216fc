//! Several clusters on one PostgreSQL database, as slurmdbd keeps them: each cluster's
//! tables in a schema of its own, `cluster_<ClusterName>` ([`schema`]), which every
//! connection of that cluster puts first (and alone) in its `search_path`, so that
//! every statement of the store — and of each migration — means that cluster's tables
//! without naming it; and one table shared by all, `public.clusters`, the registry
//! that `sacctmgr show cluster` lists (migration `0002_clusters.sql`).
//!
//! Job ids are therefore per cluster, as in Slurm (each cluster's `meta` keeps its
//! own `next_job_id`): two clusters may both have a job 1. A controller reads and
//! schedules only its own cluster's jobs; `sacct -M` reads another's
//! ([`find_in`]).
//!
//! A database of the single-cluster layout (its tables in `public`, as release 1 of
//! the schema made them) is **adopted** by the first controller that opens it:
//! every table moves into that controller's cluster's schema ([`adopt`]), its rows
//! unchanged, so that they belong to the configured `ClusterName`.
//!
//! **One live controller per cluster.** A controller announces itself on its writer's
//! connection (`application_name` `sluiced:<cluster>@<host>`, [`application_name`]);
//! one starting for a cluster that another live controller serves — a session so
//! named is connected — is refused ([`register`]) unless both hosts are listed in its
//! `SlurmctldHost`: a backup controller of the same cluster is legitimate, a second
//! cluster given the same name by mistake is not.

use postgres::{GenericClient, Transaction};

use crate::location::{Member, PgTarget};
use crate::{pg, Found, JobQuery, StoreError};

/// The schema that holds cluster `cluster`'s tables, quoted as an identifier.
pub(crate) fn schema(cluster: &str) -> String {
    format!("\"cluster_{}\"", cluster.replace('"', "\"\""))
}

/// The `application_name` a controller of `m`'s cluster announces itself with
/// (PostgreSQL keeps at most 63 bytes of it).
pub(crate) fn application_name(m: &Member) -> String {
    truncated(format!("sluiced:{}@{}", m.cluster, m.host))
}

fn truncated(mut name: String) -> String {
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// Puts cluster `cluster`'s schema alone on the connection's `search_path`.
pub(crate) fn enter(c: &mut impl GenericClient, cluster: &str) -> Result<(), postgres::Error> {
    c.batch_execute(&format!("SET search_path TO {}", schema(cluster)))
}

/// Creates the cluster's schema if needed and, on a database of the single-cluster
/// layout (tables in `public`), moves every table there: they become this cluster's.
/// Whether tables were moved.
///
/// Errors: the database cannot be written, or it holds both layouts' tables for this
/// cluster (refused: nothing is moved).
pub(crate) fn adopt(tx: &mut Transaction, target: &PgTarget) -> Result<bool, StoreError> {
    let e = pg::error(target);
    let cluster = target.cluster();
    tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {}", schema(cluster)))
        .map_err(&e)?;
    let single: bool = tx
        .query_one(
            "SELECT to_regclass('public.schema_version') IS NOT NULL",
            &[],
        )
        .map_err(&e)?
        .get(0);
    if !single {
        return Ok(false);
    }
    let ours: bool = tx
        .query_one(
            "SELECT to_regclass(format('%I.schema_version', 'cluster_' || $1::TEXT)) IS NOT NULL",
            &[&cluster],
        )
        .map_err(&e)?
        .get(0);
    if ours {
        return Err(StoreError::Schema(format!(
            "PostgreSQL {}: the database holds tables of a single cluster (in schema \
             public) and cluster {cluster}'s own (in schema cluster_{cluster}); move or \
             drop one set (pg_dump first) before starting the controller",
            target.describe()
        )));
    }
    let tables: Vec<String> = tx
        .query(
            "SELECT tablename::TEXT FROM pg_tables WHERE schemaname = 'public'
             AND tablename <> 'clusters' ORDER BY tablename",
            &[],
        )
        .map_err(&e)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for t in &tables {
        tx.batch_execute(&format!(
            "ALTER TABLE public.\"{}\" SET SCHEMA {}",
            t.replace('"', "\"\""),
            schema(cluster)
        ))
        .map_err(&e)?;
    }
    Ok(true)
}

/// Refuses to start a controller for a cluster another live controller serves (see
/// the module's documentation), else records this one in the registry and announces
/// it on this connection (the writer's), within the caller's transaction.
///
/// Errors: another live controller serves the cluster, or the database cannot be
/// written.
pub(crate) fn register(tx: &mut Transaction, target: &PgTarget) -> Result<(), StoreError> {
    let e = pg::error(target);
    let m = &target.member;
    let prefix = truncated(format!("sluiced:{}@", m.cluster));
    let live: Vec<String> = tx
        .query(
            "SELECT application_name FROM pg_stat_activity
             WHERE pid <> pg_backend_pid() AND datname = current_database()
               AND starts_with(application_name, $1)",
            &[&prefix],
        )
        .map_err(&e)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for name in live {
        let host = name.get(prefix.len()..).unwrap_or("");
        if !(m.listed.iter().any(|h| h == host) && m.listed.contains(&m.host)) {
            return Err(StoreError::ClusterTaken(format!(
                "cluster {} is already served by a live controller on host {} (PostgreSQL {}); \
                 give this cluster another ClusterName in slurm.conf, or stop that \
                 controller first (a backup controller must be listed with it in SlurmctldHost)",
                m.cluster,
                if host.is_empty() { "?" } else { host },
                target.describe()
            )));
        }
    }
    tx.execute(
        "INSERT INTO public.clusters (name, control_host, control_port, controllers)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) DO UPDATE SET control_host = EXCLUDED.control_host,
           control_port = EXCLUDED.control_port, controllers = EXCLUDED.controllers,
           last_start = now()",
        &[
            &m.cluster,
            &m.control_host,
            &i32::from(m.control_port),
            &m.listed.join(","),
        ],
    )
    .map_err(&e)?;
    announce(tx, m).map_err(&e)
}

/// Names this connection as a controller of `m`'s cluster (see [`register`]).
pub(crate) fn announce(c: &mut impl GenericClient, m: &Member) -> Result<(), postgres::Error> {
    c.execute(
        "SELECT set_config('application_name', $1, false)",
        &[&application_name(m)],
    )
    .map(drop)
}

/// A cluster as the registry keeps it (`sacctmgr show cluster`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterRow {
    /// `ClusterName`.
    pub name: String,
    /// Where its controller listens for TCP (empty: a Unix socket only).
    pub control_host: String,
    /// Its TCP port (0: none).
    pub control_port: u16,
    /// The hosts its `SlurmctldHost` lists.
    pub controllers: Vec<String>,
}

/// Every registered cluster, by name.
pub(crate) fn list(c: &mut impl GenericClient) -> Result<Vec<ClusterRow>, postgres::Error> {
    let known: bool = c
        .query_one("SELECT to_regclass('public.clusters') IS NOT NULL", &[])?
        .get(0);
    if !known {
        return Ok(Vec::new());
    }
    Ok(c.query(
        "SELECT name, control_host, control_port, controllers FROM public.clusters
             ORDER BY name COLLATE \"C\"",
        &[],
    )?
    .iter()
    .map(|r| ClusterRow {
        name: r.get(0),
        control_host: r.get(1),
        control_port: u16::try_from(r.get::<_, i32>(2)).unwrap_or(0),
        controllers: r
            .get::<_, String>(3)
            .split(',')
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .collect(),
    })
    .collect())
}

/// The jobs `q` selects in cluster `cluster`'s tables (nothing for a cluster the
/// database does not hold, as slurmdbd answers for an unknown one).
pub(crate) fn find_in(
    c: &mut postgres::Client,
    cluster: &str,
    q: &JobQuery,
) -> Result<Found, postgres::Error> {
    let mut tx = c.transaction()?;
    tx.batch_execute(&format!("SET LOCAL search_path TO {}", schema(cluster)))?;
    let known: bool = tx
        .query_one("SELECT to_regclass('jobs') IS NOT NULL", &[])?
        .get(0);
    let found = if known {
        pg::find(&mut tx, q)?
    } else {
        Found::default()
    };
    tx.commit()?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_server::shared;
    use crate::tests::{keys, rows};
    use crate::{Location, Store};

    fn member(cluster: &str, host: &str, listed: &[&str]) -> Member {
        Member {
            cluster: cluster.into(),
            host: host.into(),
            listed: listed.iter().map(|h| h.to_string()).collect(),
            control_host: "10.0.0.1".into(),
            control_port: 6817,
        }
    }

    fn at(t: &PgTarget, m: Member) -> Location {
        Location::Postgres(Box::new(t.clone().for_member(m)))
    }

    fn ids(f: &Found) -> Vec<(u64, &str)> {
        f.jobs.iter().map(|r| (r.id, r.record.as_str())).collect()
    }

    #[test]
    fn two_clusters_share_a_database_each_with_its_own_jobs_and_ids() {
        let Some(server) = shared("two clusters") else {
            return;
        };
        let db = server.database("t_two_clusters");
        let (a, _wa, _) = Store::open_at(&at(&db, member("alpha", "ha", &[])), 1, keys).unwrap();
        let (b, _wb, _) = Store::open_at(&at(&db, member("beta", "hb", &[])), 1, keys).unwrap();
        // Both clusters' first job is job 1.
        for (s, who) in [(&a, "alpha"), (&b, "beta")] {
            s.insert_jobs(1, rows([format!("{who} job 1 user=u")]))
                .recv()
                .unwrap()
                .unwrap();
        }
        b.insert_jobs(2, rows(["beta job 2 user=u".to_string()]))
            .recv()
            .unwrap()
            .unwrap();
        let all = JobQuery::default();
        assert_eq!(
            ids(&a.query_jobs(&all).unwrap()),
            [(1, "alpha job 1 user=u")]
        );
        assert_eq!(
            ids(&a.query_cluster_jobs("beta", &all).unwrap()),
            [(1, "beta job 1 user=u"), (2, "beta job 2 user=u")],
            "sacct -M beta from alpha's controller"
        );
        assert_eq!(
            ids(&b.query_cluster_jobs("alpha", &all).unwrap()),
            [(1, "alpha job 1 user=u")]
        );
        assert!(a.query_cluster_jobs("gamma", &all).unwrap().jobs.is_empty());
        let names: Vec<String> = a.clusters().unwrap().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["alpha", "beta"]);
        assert_eq!(a.clusters().unwrap()[0].control_port, 6817);
        drop((a, _wa));
        // Reopened, each cluster reads back its own jobs and next id only.
        let (_a, _wa, snap) =
            Store::open_at(&at(&db, member("alpha", "ha", &[])), 1, keys).unwrap();
        assert_eq!(snap.jobs.len(), 1);
        assert_eq!(snap.next_job_id, 2);
    }

    #[test]
    fn a_second_live_controller_of_a_cluster_is_refused_unless_both_are_listed() {
        let Some(server) = shared("cluster taken") else {
            return;
        };
        let db = server.database("t_cluster_taken");
        let (first, writer, _) =
            Store::open_at(&at(&db, member("alpha", "h1", &["h1", "h2"])), 1, keys).unwrap();
        let e = Store::open_at(&at(&db, member("alpha", "h9", &[])), 1, keys)
            .err()
            .expect("a second cluster named alpha is refused")
            .to_string();
        assert!(
            e.starts_with("cluster alpha is already served by a live controller on host h1"),
            "{e}"
        );
        assert!(e.contains("give this cluster another ClusterName"), "{e}");
        // A backup listed with the live one in SlurmctldHost may start.
        drop(Store::open_at(&at(&db, member("alpha", "h2", &["h1", "h2"])), 1, keys).unwrap());
        // Another cluster may, and so may alpha once its controller is gone.
        drop(Store::open_at(&at(&db, member("beta", "h9", &[])), 1, keys).unwrap());
        drop((first, writer));
        drop(Store::open_at(&at(&db, member("alpha", "h9", &[])), 1, keys).unwrap());
    }

    #[test]
    fn a_single_cluster_database_is_adopted_by_the_configured_cluster() {
        let Some(server) = shared("cluster adopt") else {
            return;
        };
        let db = server.database("t_cluster_adopt");
        // The layout of schema version 1: tables in public, one job.
        let mut c = pg::connect(&db).unwrap();
        c.batch_execute(
            "SET search_path TO public;
             CREATE TABLE schema_version (
                 version BIGINT PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now());
             INSERT INTO schema_version (version) VALUES (1);",
        )
        .unwrap();
        c.batch_execute(include_str!("../migrations/pg/0001_initial.sql"))
            .unwrap();
        c.batch_execute(
            "INSERT INTO jobs (id, record, \"user\") VALUES (7, 'old job 7 user=u', 'u');
             UPDATE meta SET value = 8 WHERE key = 'next_job_id';
             INSERT INTO audit (time, job_id, uid, kind, detail) VALUES (1, 7, 0, 'start', '');",
        )
        .unwrap();
        drop(c);
        let (s, _w, snap) = Store::open_at(&at(&db, member("alpha", "h1", &[])), 1, keys).unwrap();
        assert_eq!(snap.jobs.len(), 1);
        assert_eq!(snap.jobs[0].record, "old job 7 user=u");
        assert_eq!(snap.next_job_id, 8);
        // The audit trail's identity column moved with its table.
        s.audit(vec![crate::AuditRecord {
            time: 2,
            job_id: 7,
            uid: 0,
            kind: "end".into(),
            detail: String::new(),
            holds: crate::HoldChange::None,
        }]);
        s.sync().unwrap();
        assert_eq!(
            s.audit_events(&crate::AuditFilter::default())
                .unwrap()
                .len(),
            2
        );
        // Another cluster on the same database starts empty.
        let (b, _wb, snap) = Store::open_at(&at(&db, member("beta", "h2", &[])), 1, keys).unwrap();
        assert!(snap.jobs.is_empty());
        assert_eq!(
            ids(&b.query_cluster_jobs("alpha", &JobQuery::default()).unwrap()).len(),
            1
        );
        let mut c = pg::connect(&db).unwrap();
        let left: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'clusters'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(left, 0, "every table moved");
    }

    #[test]
    fn a_sqlite_store_holds_its_own_cluster_only() {
        let path = crate::tests::temp("sqlite one cluster");
        let (s, _w, _) = Store::open(&path, 1, keys).unwrap();
        s.insert_jobs(1, rows(["job 1 user=u".to_string()]))
            .recv()
            .unwrap()
            .unwrap();
        assert!(s
            .query_cluster_jobs("other", &JobQuery::default())
            .unwrap()
            .jobs
            .is_empty());
        assert!(s.clusters().unwrap().is_empty());
    }
}
