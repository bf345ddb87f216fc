//! The audit trail in the server: recorded events handed to the store, the retention
//! purge, and `GET /v1/audit` for `sluice audit`.
//!
//! Privacy follows slurm.conf's `PrivateData=jobs`: without it (Slurm's default, where
//! `squeue` shows everyone's jobs) everyone sees every event. With it, operators (root,
//! the controller's user, `AdminLevel` Operator or Administrator) see everything; other
//! users see their own jobs' events and holds, and of other users' only how many there
//! are. Jobs of other users named in a visible event (a preemptor, a victim) are left
//! unnamed.

use std::time::Duration;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sluice_proto::accounts::AdminLevel;
use sluice_proto::audit::{
    AuditEvent, AuditHold, AuditQuery, AuditReply, AuditWhat, JobRef, RequeueCause,
};
use sluice_store::{AuditFilter, AuditRow, HoldFilter, HoldRow};

use super::{error, now, user_and_group, App, Peer};
use crate::accounts::Requester;
use crate::state::audit::store_record;
use crate::state::BAD_JOB;

/// Hands the events the controller recorded to the store (in order: taken and sent
/// under the controller's lock; the store writes them without anyone waiting).
pub(super) fn flush(app: &App) {
    let mut ctl = app.ctl.lock().expect("lock");
    let events = ctl.take_audit();
    if !events.is_empty() {
        app.store.audit(events.iter().map(store_record).collect());
    }
}

/// Rows deleted per purge transaction: small enough that submissions queued behind a
/// purge wait little.
const PURGE_BATCH: u64 = 5_000;

/// How often old audit rows are purged.
const PURGE_EVERY: Duration = Duration::from_secs(3_600);

/// Purges audit rows older than `retention` seconds now and every hour.
pub(super) async fn purge_loop(app: App, retention: i64) {
    loop {
        let before = now() - retention;
        loop {
            let rx = app.store.purge_audit(before, PURGE_BATCH);
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
        tokio::time::sleep(PURGE_EVERY).await;
    }
}

/// Whether `peer` sees every user's audit trail.
fn operator(app: &App, peer: Peer) -> bool {
    let caller = app.caller(peer);
    if caller.admin || !app.ctl.lock().expect("lock").private_data().jobs {
        return true;
    }
    let (name, _) = user_and_group(peer.uid, peer.gid);
    let who = Requester {
        name,
        superuser: false,
    };
    app.ctl.lock().expect("lock").accounts().admin_level(&who) >= AdminLevel::Operator
}

/// An event from its row (`None` for a row this controller cannot read).
fn event(row: &AuditRow) -> Option<AuditEvent> {
    Some(AuditEvent {
        seq: row.seq as u64,
        time: row.time,
        job_id: row.job_id,
        uid: row.uid,
        what: AuditWhat::from_parts(&row.kind, &row.detail).ok()?,
    })
}

/// `e` as user `uid` may see it: other users' jobs it names left unnamed.
fn redact(mut e: AuditEvent, uid: u32) -> AuditEvent {
    let hide = |r: &mut JobRef| {
        if r.uid != Some(uid) {
            *r = JobRef::default();
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
    e
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
    let all = operator(&app, peer);
    {
        let ctl = app.ctl.lock().expect("lock");
        // An array task (`123_4`) is its own record.
        if let (Some(job), Some(task)) = (q.job, q.task.take()) {
            match ctl.task_record(job, task) {
                Some(id) => q.job = Some(id),
                None => return error(StatusCode::NOT_FOUND, BAD_JOB),
            }
        }
    }
    let unknown_node = q.node.as_deref().is_some_and(|n| {
        let ctl = app.ctl.lock().expect("lock");
        ctl.conf.node_id(n).is_none()
    });
    flush(&app);
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
        Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    if unknown_node && holds.is_empty() {
        // Neither configured nor in the trail (a node since removed still answers).
        return error(StatusCode::NOT_FOUND, "Invalid node name specified");
    }
    let mut reply = AuditReply::default();
    for e in events.iter().filter_map(event) {
        if all {
            reply.events.push(e);
        } else if e.uid == peer.uid {
            reply.events.push(redact(e, peer.uid));
        } else {
            reply.hidden_events += 1;
        }
    }
    for mut h in group(holds) {
        if all || h.uid == Some(peer.uid) {
            h.cause = h.cause.map(|c| if all { c } else { redact(c, peer.uid) });
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

    #[test]
    fn a_user_sees_their_own_jobs_named_and_other_users_jobs_unnamed() {
        let e = |what| AuditEvent {
            seq: 1,
            time: 10,
            job_id: 5,
            uid: 1000,
            what,
        };
        let preempted = e(AuditWhat::Preempted {
            by: job(6, 1001),
            rule: PreemptRule::default(),
            mode: "REQUEUE".into(),
            grace: 5,
        });
        let AuditWhat::Preempted { by, .. } = redact(preempted.clone(), 1000).what else {
            unreachable!()
        };
        assert_eq!(by, JobRef::default());
        let AuditWhat::Preempted { by, .. } = redact(preempted, 1001).what else {
            unreachable!()
        };
        assert_eq!(by, job(6, 1001));
        let preempting = e(AuditWhat::Preempting {
            victims: vec![job(7, 1000), job(8, 1002)],
            rule: PreemptRule::default(),
        });
        let AuditWhat::Preempting { victims, .. } = redact(preempting, 1000).what else {
            unreachable!()
        };
        assert_eq!(victims, vec![job(7, 1000), JobRef::default()]);
        let requeued = e(AuditWhat::Requeued {
            run: 0,
            ended_as: JobState::Preempted,
            cause: RequeueCause::Preempted { by: job(6, 1001) },
            released: vec![],
        });
        let AuditWhat::Requeued { cause, .. } = redact(requeued, 1000).what else {
            unreachable!()
        };
        assert_eq!(
            cause,
            RequeueCause::Preempted {
                by: JobRef::default()
            }
        );
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
