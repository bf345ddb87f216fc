//! The audit trail in the server: recorded events handed to the store, the retention
//! purge, and `GET /v1/audit` for `sluice audit`.
//!
//! Privacy follows slurm.conf's `PrivateData`; operators (root, the controller's user,
//! `AdminLevel` Operator or Administrator) see everything. Without `jobs` in it
//! (Slurm's default, where `squeue` shows everyone's jobs) everyone sees every event.
//! With `jobs`, other users see their own jobs' events and holds, and of other users'
//! only how many there are; jobs of other users named in a visible event (a preemptor,
//! a victim) are left unnamed. With `users`, other users' jobs' events and holds stay
//! visible (unless `jobs` hides them) without whose they are: their owner's uid and
//! name and who acted on them (held, released, updated, cancelled, requeued them) are
//! left out unless it was the reader, and jobs of other users named in any visible
//! event keep their id but not their owner, as `sluice explain` names them. The
//! reader's own jobs' events name everyone who acted on them.

use std::time::Duration;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use sluice_core::JobId;
use sluice_proto::accounts::AdminLevel;
use sluice_proto::audit::{
    AuditEvent, AuditHold, AuditQuery, AuditReply, AuditWhat, JobRef, RequeueCause,
};
use sluice_proto::error::{ApiError, ErrorCode, INVALID_NODE_NAME};
use sluice_proto::types::compact_indices;
use sluice_store::{AuditFilter, AuditRow, HoldFilter, HoldRow, Store};

use super::input::{AuditScope, Request};
use super::routes::storage;
use super::{now, refuse, user_and_group, App, Peer};
use crate::accounts::Requester;

/// Rows deleted per purge transaction: small enough that submissions queued behind a
/// purge wait little.
const PURGE_BATCH: u64 = 5_000;

/// How often old audit rows are purged.
const PURGE_EVERY: Duration = Duration::from_secs(3_600);

/// Purges audit rows older than `retention` seconds now and every hour, until `stop`.
pub(super) async fn purge_loop(
    store: Store,
    retention: i64,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let before = now() - retention;
        loop {
            let rx = store.purge_audit(before, PURGE_BATCH);
            match tokio::task::spawn_blocking(move || rx.recv()).await {
                Ok(Ok(Ok(n))) if n >= PURGE_BATCH => continue,
                Ok(Ok(Ok(_))) => break,
                Ok(Ok(Err(e))) => {
                    tracing::warn!("audit purge failed: {e}");
                    break;
                }
                _ => break,
            }
        }
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(PURGE_EVERY) => {}
        }
    }
}

/// What a reader may see of other users' part of the trail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sight {
    /// The reader's uid.
    uid: u32,
    /// Sees other users' jobs (not `PrivateData=jobs`, or an operator).
    jobs: bool,
    /// Sees who other users are (not `PrivateData=users`, or an operator).
    users: bool,
}

impl Sight {
    /// Sees everything as recorded.
    fn all(self) -> bool {
        self.jobs && self.users
    }
}

/// What `peer` may see of other users' audit trail, given the controller's answer.
fn sight(scope: &AuditScope, admin: bool, peer: Peer) -> Sight {
    let s = Sight {
        uid: peer.uid,
        jobs: !scope.private.jobs,
        users: !scope.private.users,
    };
    if s.all() {
        return s;
    }
    let operator = admin || scope.level >= AdminLevel::Operator;
    Sight {
        jobs: s.jobs || operator,
        users: s.users || operator,
        ..s
    }
}

/// An event from its row (`None` for a row this controller cannot read).
fn event(row: &AuditRow) -> Option<AuditEvent> {
    Some(AuditEvent {
        seq: row.seq as u64,
        time: row.time,
        job_id: row.job_id,
        uid: Some(row.uid),
        what: AuditWhat::from_parts(&row.kind, &row.detail).ok()?,
    })
}

/// Visible event `e` as reader `s` may see it: other users' jobs it names left
/// unnamed (`PrivateData=jobs`) or named without their owners (`PrivateData=users`);
/// of another user's job (`PrivateData=users`), whose it is and who acted on it (unless
/// the reader) left out too.
fn redact(mut e: AuditEvent, s: Sight) -> AuditEvent {
    if s.all() {
        return e;
    }
    let hide = |r: &mut JobRef| {
        if r.uid != Some(s.uid) {
            if !s.jobs {
                *r = JobRef::default();
            } else if !s.users {
                r.uid = None;
            }
        }
    };
    match &mut e.what {
        AuditWhat::Preempted { by, .. } => hide(by),
        AuditWhat::Preempting { victims, .. } => victims.iter_mut().for_each(hide),
        AuditWhat::Requeued {
            cause: RequeueCause::Preempted { by },
            ..
        } => hide(by),
        _ => {}
    }
    if s.users || e.uid == Some(s.uid) {
        return e;
    }
    // Another user's job, seen without whose it is.
    e.uid = None;
    let hide_uid = |by: &mut Option<u32>| {
        if *by != Some(s.uid) {
            *by = None;
        }
    };
    match &mut e.what {
        AuditWhat::Submitted { user, .. } | AuditWhat::Started { user, .. } => *user = None,
        AuditWhat::Held { by, .. }
        | AuditWhat::Released { by }
        | AuditWhat::Suspended { by }
        | AuditWhat::Resumed { by }
        | AuditWhat::Updated { by, .. }
        | AuditWhat::Cancelled { by, .. }
        | AuditWhat::Requeued {
            cause: RequeueCause::Request { by },
            ..
        } => hide_uid(by),
        _ => {}
    }
    e
}

/// Why GPU index `gpu` of node `node`, which has `count` GPUs, cannot be asked about:
/// `Node vm has no GPU 5 (it has no GPUs)`, `Node g1 has no GPU 5 (it has 4: 0-3)`;
/// `None` when it has that GPU.
fn missing_gpu(node: &str, gpu: u32, count: u32) -> Option<String> {
    if gpu < count {
        return None;
    }
    let has = match count {
        0 => "no GPUs".to_string(),
        n => {
            let all: Vec<u32> = (0..n).collect();
            format!("{n}: {}", compact_indices(&all))
        }
    };
    Some(format!("Node {node} has no GPU {gpu} (it has {has})"))
}

/// Rows of one device table grouped into one hold per job run and node (rows come by
/// start, job, run, GPU).
fn group(rows: Vec<HoldRow>) -> Vec<AuditHold> {
    let mut out: Vec<AuditHold> = Vec::new();
    for r in rows {
        if let Some(last) = out.iter_mut().rev().find(|h| {
            h.job_id == Some(r.job_id) && h.run == r.run && h.node == r.node && h.start == r.start
        }) {
            last.gpus.extend(r.gpu);
            continue;
        }
        out.push(AuditHold {
            job_id: Some(r.job_id),
            run: r.run,
            uid: Some(r.uid),
            node: r.node,
            gpus: r.gpu.into_iter().collect(),
            start: r.start,
            end: r.end,
            cause: r.cause.as_ref().and_then(event),
        });
    }
    out
}

/// `GET /v1/audit?job=&node=&gpu=&since=&until=`: a job's events, the holds of a node
/// (or one GPU of it), or every event in a window; as the caller may see them.
pub(super) async fn query(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Query(mut q): Query<AuditQuery>,
) -> Response {
    let caller = app.caller(peer);
    let (name, _) = user_and_group(peer.uid, peer.gid);
    let who = Requester {
        name,
        superuser: false,
    };
    let task = q.job.map(JobId).zip(q.task.take());
    let node = q.node.clone();
    let scope = match app
        .ask(|reply| Request::AuditScope {
            who,
            task,
            node,
            reply,
        })
        .await
    {
        Ok(s) => s,
        Err(e) => return refuse(e),
    };
    let sight = sight(&scope, caller.admin, peer);
    // An array task (`123_4`) is its own record.
    match scope.task_record {
        Some(Some(id)) => q.job = Some(id.0),
        Some(None) => return refuse(ApiError::invalid_job()),
        None => {}
    }
    // A node not configured, or a GPU it does not have (`None`: configured, and the
    // GPU asked about, if any, is one of its own).
    let refused = match (&q.node, scope.node_gpus) {
        (Some(_), Some(None)) => Some(ApiError::new(ErrorCode::InvalidNodeName, INVALID_NODE_NAME)),
        (Some(n), Some(Some(count))) => q
            .gpu
            .and_then(|g| missing_gpu(n, g, count))
            .map(|m| ApiError::new(ErrorCode::InvalidDevice, m)),
        _ => None,
    };
    let store = app.store.clone();
    let read = tokio::task::spawn_blocking(move || {
        let events = if q.node.is_none() || q.job.is_some() {
            store.audit_events(&AuditFilter {
                job: q.job,
                since: q.since,
                until: q.until,
            })?
        } else {
            Vec::new()
        };
        let holds = match &q.node {
            Some(node) => store.audit_holds(&HoldFilter {
                node: node.clone(),
                gpu: q.gpu,
                job: q.job,
                since: q.since,
                until: q.until,
            })?,
            None => Vec::new(),
        };
        Ok::<_, sluice_store::StoreError>((events, holds))
    })
    .await;
    let (events, holds) = match read {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return refuse(storage(e.to_string())),
        Err(e) => return refuse(storage(e.to_string())),
    };
    if let (Some(why), true) = (refused, holds.is_empty()) {
        // Neither configured nor in the trail (a node since removed, or a GPU since
        // taken out, still answers).
        return refuse(why);
    }
    let mut reply = AuditReply::default();
    for e in events.iter().filter_map(event) {
        if sight.jobs || e.uid == Some(peer.uid) {
            reply.events.push(redact(e, sight));
        } else {
            reply.hidden_events += 1;
        }
    }
    for mut h in group(holds) {
        if sight.jobs || h.uid == Some(peer.uid) {
            if !sight.users && h.uid != Some(peer.uid) {
                h.uid = None;
            }
            h.cause = h.cause.map(|c| redact(c, sight));
            reply.holds.push(h);
        } else {
            reply.hidden_holds += 1;
        }
    }
    if q.job.is_some() {
        // Counting another user's events of one job would tell that the job exists.
        reply.hidden_events = 0;
        reply.hidden_holds = 0;
    }
    Json(reply).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::audit::PreemptRule;
    use sluice_proto::types::JobState;

    fn job(id: u64, uid: u32) -> JobRef {
        JobRef {
            job: Some(id),
            uid: Some(uid),
        }
    }

    /// Reader 1000 under `PrivateData=jobs` (`users` too when `users_private`).
    fn jobs_private(users_private: bool) -> Sight {
        Sight {
            uid: 1000,
            jobs: false,
            users: !users_private,
        }
    }

    /// Reader `uid` under `PrivateData=users` alone.
    fn users_private(uid: u32) -> Sight {
        Sight {
            uid,
            jobs: true,
            users: false,
        }
    }

    /// An event of job 5 (owner `uid`).
    fn of(uid: u32, what: AuditWhat) -> AuditEvent {
        AuditEvent {
            seq: 1,
            time: 10,
            job_id: 5,
            uid: Some(uid),
            what,
        }
    }

    fn preempted(by: JobRef) -> AuditWhat {
        AuditWhat::Preempted {
            by,
            rule: PreemptRule::default(),
            mode: "REQUEUE".into(),
            grace: 5,
        }
    }

    #[test]
    fn under_private_jobs_a_user_sees_other_users_jobs_unnamed() {
        let e = of(1000, preempted(job(6, 1001)));
        assert_eq!(
            redact(e.clone(), jobs_private(false)),
            of(1000, preempted(JobRef::default()))
        );
        let mine = Sight {
            uid: 1001,
            ..jobs_private(false)
        };
        assert_eq!(redact(e, mine), of(1000, preempted(job(6, 1001))));
        let preempting = |victims| AuditWhat::Preempting {
            victims,
            rule: PreemptRule::default(),
        };
        assert_eq!(
            redact(
                of(1000, preempting(vec![job(7, 1000), job(8, 1002)])),
                jobs_private(true)
            ),
            of(1000, preempting(vec![job(7, 1000), JobRef::default()]))
        );
        let requeued = |by| AuditWhat::Requeued {
            run: 0,
            ended_as: JobState::Preempted,
            cause: RequeueCause::Preempted { by },
            released: vec![],
        };
        assert_eq!(
            redact(of(1000, requeued(job(6, 1001))), jobs_private(false)),
            of(1000, requeued(JobRef::default()))
        );
    }

    #[test]
    fn under_private_users_other_users_jobs_are_seen_without_whose_they_are() {
        let reader = users_private(1000);
        // Another user's job: no owner, no name, nobody who acted but the reader.
        let hidden = |what| AuditEvent {
            uid: None,
            ..of(1001, what)
        };
        let submitted = |user: Option<&str>| AuditWhat::Submitted {
            user: user.map(str::to_string),
            partition: "low".into(),
            account: "physics".into(),
            qos: "normal".into(),
        };
        assert_eq!(
            redact(of(1001, submitted(Some("bob"))), reader),
            hidden(submitted(None))
        );
        let held = |by| AuditWhat::Held { by, admin: true };
        assert_eq!(redact(of(1001, held(Some(0))), reader), hidden(held(None)));
        // What the reader did is theirs to see.
        let cancelled = |by| AuditWhat::Cancelled {
            by,
            state: JobState::Running,
        };
        assert_eq!(
            redact(of(1001, cancelled(Some(1000))), reader),
            hidden(cancelled(Some(1000)))
        );
        let released = AuditWhat::Released { by: Some(1001) };
        assert_eq!(
            redact(of(1001, released), reader),
            hidden(AuditWhat::Released { by: None })
        );
        let updated = |by| AuditWhat::Updated {
            by,
            changes: vec!["TimeLimit=00:10:00".into()],
        };
        assert_eq!(
            redact(of(1001, updated(Some(1001))), reader),
            hidden(updated(None))
        );
        let requeued = |by| AuditWhat::Requeued {
            run: 0,
            ended_as: JobState::Requeued,
            cause: RequeueCause::Request { by },
            released: vec![],
        };
        assert_eq!(
            redact(of(1001, requeued(Some(0))), reader),
            hidden(requeued(None))
        );
        let started = |user: Option<&str>| AuditWhat::Started {
            run: 0,
            pass: "main".into(),
            priority: 1,
            rank: Some(1),
            partition: "low".into(),
            reservation: None,
            user: user.map(str::to_string),
            nodes: vec![],
        };
        assert_eq!(
            redact(of(1001, started(Some("bob"))), reader),
            hidden(started(None))
        );
        // Jobs named in an event keep their ids; only the reader's own keep owners.
        assert_eq!(
            redact(of(1001, preempted(job(5, 1000))), reader),
            hidden(preempted(job(5, 1000)))
        );
        let anonymous = JobRef {
            job: Some(6),
            uid: None,
        };
        assert_eq!(
            redact(of(1000, preempted(job(6, 1001))), reader),
            of(1000, preempted(anonymous))
        );
        // The reader's own job names everyone who acted on it.
        assert_eq!(
            redact(of(1000, held(Some(0))), reader),
            of(1000, held(Some(0)))
        );
        assert_eq!(
            redact(of(1000, submitted(Some("alice"))), reader),
            of(1000, submitted(Some("alice")))
        );
        // Under `jobs` too, another user's job in the reader's event stays unnamed.
        assert_eq!(
            redact(of(1000, preempted(job(6, 1001))), jobs_private(true)),
            of(1000, preempted(JobRef::default()))
        );
        // An operator (or no PrivateData) sees everything as recorded.
        let all = Sight {
            uid: 1000,
            jobs: true,
            users: true,
        };
        assert_eq!(
            redact(of(1001, held(Some(0))), all),
            of(1001, held(Some(0)))
        );
    }

    #[test]
    fn a_gpu_a_node_lacks_is_refused_saying_what_it_has() {
        assert_eq!(
            missing_gpu("vm", 5, 0).as_deref(),
            Some("Node vm has no GPU 5 (it has no GPUs)")
        );
        assert_eq!(
            missing_gpu("g1", 4, 4).as_deref(),
            Some("Node g1 has no GPU 4 (it has 4: 0-3)")
        );
        assert_eq!(
            missing_gpu("g2", 1, 1).as_deref(),
            Some("Node g2 has no GPU 1 (it has 1: 0)")
        );
        assert_eq!(missing_gpu("g1", 3, 4), None);
    }

    #[test]
    fn device_rows_become_one_hold_per_job_run_and_node() {
        let row = |job: u64, run: u32, gpu: Option<u32>, start: i64| HoldRow {
            job_id: job,
            run,
            node: "g1".into(),
            gpu,
            start,
            end: Some(start + 10),
            uid: 1000,
            cause: None,
        };
        let holds = group(vec![
            row(1, 0, Some(0), 100),
            row(1, 0, Some(1), 100),
            row(2, 0, None, 105),
            row(1, 1, Some(1), 110),
        ]);
        assert_eq!(
            holds
                .iter()
                .map(|h| (h.job_id, h.run, h.gpus.clone(), h.start, h.end))
                .collect::<Vec<_>>(),
            vec![
                (Some(1), 0, vec![0, 1], 100, Some(110)),
                (Some(2), 0, vec![], 105, Some(115)),
                (Some(1), 1, vec![1], 110, Some(120)),
            ]
        );
    }
}
