//! The requests the controller served, by kind and by user, as `sdiag` lists them:
//! every route is a Slurm message type (`REQUEST_JOB_INFO` for `squeue`'s listing,
//! `MESSAGE_NODE_REGISTRATION_STATUS` for an agent registering, ...), with Slurm's
//! number; what only Sluice has gets a name of its own (`SLUICE_...`, numbers from
//! 20001, a range Slurm does not use).
//!
//! Counted by a layer around the routes, off the loop: the one piece of the server's
//! state that handlers share directly, a counter under a lock held for an increment.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use sluice_proto::diag::RpcCount;

use super::{App, Peer};

/// A kind of request: Slurm's message type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RpcKind {
    /// Its name.
    pub name: &'static str,
    /// Its number.
    pub id: u32,
}

impl RpcKind {
    const fn new(name: &'static str, id: u32) -> Self {
        RpcKind { name, id }
    }

    /// `salloc` or `srun` asking for an allocation (a submission of an interactive
    /// job): the submit route marks its answer with this.
    pub const ALLOCATION: RpcKind = RpcKind::new("REQUEST_RESOURCE_ALLOCATION", 4001);
}

/// The kind of a request to `path` (the route's template) with `method`.
pub(super) fn kind_of(method: &Method, path: &str) -> Option<RpcKind> {
    let get = method == Method::GET;
    let k = RpcKind::new;
    Some(match path {
        "/v1/ping" => k("REQUEST_PING", 1008),
        "/v1/jobs" if get => k("REQUEST_JOB_INFO", 2003),
        "/v1/jobs" => k("REQUEST_SUBMIT_BATCH_JOB", 4003),
        "/v1/will-run" => k("REQUEST_JOB_WILL_RUN", 4012),
        "/v1/jobs/{id}" => k("REQUEST_JOB_INFO_SINGLE", 2021),
        "/v1/jobs/{id}/devices/{node}" => k("REQUEST_JOB_ALLOCATION_INFO", 4014),
        "/v1/jobs/{id}/hold" | "/v1/jobs/{id}/release" | "/v1/jobs/{id}/update" => {
            k("REQUEST_UPDATE_JOB", 3001)
        }
        "/v1/jobs/{id}/requeue" => k("REQUEST_JOB_REQUEUE", 5023),
        "/v1/jobs/{id}/steps" => k("REQUEST_JOB_STEP_CREATE", 5001),
        "/v1/jobs/{id}/steps/{step}/end" => k("REQUEST_STEP_COMPLETE", 5016),
        "/v1/jobs/{id}/complete" => k("REQUEST_COMPLETE_JOB_ALLOCATION", 5017),
        "/v1/cancel" => k("REQUEST_KILL_JOB", 5032),
        "/v1/nodes" => k("REQUEST_NODE_INFO", 2007),
        "/v1/nodes/update" => k("REQUEST_UPDATE_NODE", 3002),
        "/v1/priority" => k("REQUEST_PRIORITY_FACTORS", 2026),
        "/v1/shares" => k("REQUEST_SHARE_INFO", 2022),
        "/v1/reservations" if get => k("REQUEST_RESERVATION_INFO", 2024),
        "/v1/reservations" => k("REQUEST_UPDATE_RESERVATION", 3009),
        "/v1/partitions" => k("REQUEST_PARTITION_INFO", 2009),
        "/v1/config" => k("REQUEST_BUILD_INFO", 2001),
        "/v1/diag" | "/v1/diag/reset" => k("REQUEST_STATS_INFO", 2035),
        "/v1/agent/register" => k("MESSAGE_NODE_REGISTRATION_STATUS", 1002),
        "/v1/agent/ended" => k("REQUEST_COMPLETE_BATCH_SCRIPT", 5018),
        "/v1/agent/step-ended" => k("REQUEST_STEP_COMPLETE", 5016),
        "/v1/agent/run-gone" => k("MESSAGE_EPILOG_COMPLETE", 6012),
        "/v1/reconfigure" => k("REQUEST_RECONFIGURE", 1003),
        sluice_proto::token::TOKEN_PATH => k("REQUEST_AUTH_TOKEN", 5039),
        // The REST API: what slurmrestd would ask slurmctld for.
        "/slurm/v0.0.44/ping" => k("REQUEST_PING", 1008),
        "/slurm/v0.0.44/diag" => k("REQUEST_STATS_INFO", 2035),
        "/slurm/v0.0.44/jobs" if get => k("REQUEST_JOB_INFO", 2003),
        "/slurm/v0.0.44/jobs" => k("REQUEST_KILL_JOBS", 5040),
        "/slurm/v0.0.44/job/submit" => k("REQUEST_SUBMIT_BATCH_JOB", 4003),
        "/slurm/v0.0.44/job/{id}" if get => k("REQUEST_JOB_INFO_SINGLE", 2021),
        "/slurm/v0.0.44/job/{id}" if method == Method::POST => k("REQUEST_UPDATE_JOB", 3001),
        "/slurm/v0.0.44/job/{id}" => k("REQUEST_KILL_JOBS", 5040),
        "/slurm/v0.0.44/nodes" => k("REQUEST_NODE_INFO", 2007),
        "/slurm/v0.0.44/node/{name}" if get => k("REQUEST_NODE_INFO_SINGLE", 2040),
        "/slurm/v0.0.44/node/{name}" => k("REQUEST_UPDATE_NODE", 3002),
        "/slurm/v0.0.44/partitions" | "/slurm/v0.0.44/partition/{name}" => {
            k("REQUEST_PARTITION_INFO", 2009)
        }
        "/slurm/v0.0.44/reservations" | "/slurm/v0.0.44/reservation/{name}" => {
            k("REQUEST_RESERVATION_INFO", 2024)
        }
        "/slurm/v0.0.44/shares" => k("REQUEST_SHARE_INFO", 2022),
        // Sluice's own.
        "/v1/jobs/{id}/explain" => k("SLUICE_REQUEST_EXPLAIN", 20001),
        "/v1/accounting" => k("SLUICE_REQUEST_ACCOUNTING", 20002),
        "/v1/accounts" => k("SLUICE_REQUEST_ACCOUNTS", 20003),
        "/v1/audit" => k("SLUICE_REQUEST_AUDIT", 20004),
        sluice_proto::auth::VOUCH_PATH => k("SLUICE_REQUEST_VOUCH", 20005),
        "/v1/agent/heartbeat" => k("SLUICE_AGENT_HEARTBEAT", 20006),
        _ => return None,
    })
}

/// Counts and total times.
#[derive(Debug, Default)]
pub(super) struct RpcStats {
    by_type: BTreeMap<u32, (&'static str, u32, u64)>,
    by_user: BTreeMap<u32, (u32, u64)>,
}

impl RpcStats {
    /// A request of `kind` by `uid` that took `us` microseconds.
    pub fn record(&mut self, kind: RpcKind, uid: u32, us: u64) {
        let t = self.by_type.entry(kind.id).or_insert((kind.name, 0, 0));
        t.1 += 1;
        t.2 += us;
        let u = self.by_user.entry(uid).or_default();
        u.0 += 1;
        u.1 += us;
    }

    /// Forgets them (`sdiag -r`).
    pub fn reset(&mut self) {
        *self = RpcStats::default();
    }

    /// By kind and by user, in number order.
    pub fn report(&self) -> (Vec<RpcCount>, Vec<RpcCount>) {
        let types = self
            .by_type
            .iter()
            .map(|(&id, &(name, count, total_us))| RpcCount {
                name: name.to_string(),
                id,
                count,
                total_us,
            })
            .collect();
        let users = self
            .by_user
            .iter()
            .map(|(&id, &(count, total_us))| RpcCount {
                name: String::new(),
                id,
                count,
                total_us,
            })
            .collect();
        (types, users)
    }
}

/// The layer: times each request and counts it under its kind and its caller.
pub(super) async fn count(State(app): State<App>, req: Request, next: Next) -> Response {
    let uid = req.extensions().get::<ConnectInfo<Peer>>().map(|c| c.0.uid);
    let kind = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|p| kind_of(req.method(), p.as_str()));
    app.in_flight.fetch_add(1, Ordering::Relaxed);
    let began = Instant::now();
    let response = next.run(req).await;
    let us = began.elapsed().as_micros().min(u128::from(u64::MAX)) as u64;
    app.in_flight.fetch_sub(1, Ordering::Relaxed);
    let kind = response.extensions().get::<RpcKind>().copied().or(kind);
    if let (Some(kind), Some(uid)) = (kind, uid) {
        lock(&app.rpc).record(kind, uid, us);
    }
    response
}

/// The counters, even if a panic elsewhere poisoned their lock (they stay usable).
pub(super) fn lock(m: &Mutex<RpcStats>) -> std::sync::MutexGuard<'_, RpcStats> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_slurm_s_message_types_and_counts_add_up() {
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(
            kind_of(&get, "/v1/jobs"),
            Some(RpcKind::new("REQUEST_JOB_INFO", 2003))
        );
        assert_eq!(kind_of(&post, "/v1/jobs").unwrap().id, 4003);
        assert_eq!(
            kind_of(&post, "/v1/cancel").unwrap().name,
            "REQUEST_KILL_JOB"
        );
        assert_eq!(kind_of(&get, "/v1/nosuch"), None);
        // The REST API's changes are counted as the RPCs slurmrestd would send.
        let delete = Method::DELETE;
        let rest = |m: &Method, p: &str| kind_of(m, &format!("/slurm/v0.0.44/{p}")).unwrap().id;
        assert_eq!(
            [
                rest(&get, "jobs"),
                rest(&delete, "jobs"),
                rest(&post, "job/{id}"),
                rest(&delete, "job/{id}"),
                rest(&post, "node/{name}"),
                rest(&get, "reservations"),
                rest(&get, "shares"),
            ],
            [2003, 5040, 3001, 5040, 3002, 2024, 2022]
        );
        let mut s = RpcStats::default();
        s.record(kind_of(&get, "/v1/jobs").unwrap(), 1000, 30);
        s.record(kind_of(&get, "/v1/jobs").unwrap(), 0, 50);
        s.record(kind_of(&get, "/v1/nodes").unwrap(), 1000, 7);
        let (types, users) = s.report();
        assert_eq!(
            types
                .iter()
                .map(|t| (t.id, t.count, t.total_us, t.ave_us()))
                .collect::<Vec<_>>(),
            [(2003, 2, 80, 40), (2007, 1, 7, 7)]
        );
        assert_eq!(
            users.iter().map(|u| (u.id, u.count)).collect::<Vec<_>>(),
            [(0, 1), (1000, 2)]
        );
    }
}
