//! `GET /slurm/v0.0.44/diag`: `sdiag`'s figures as Slurm's `STATS_MSG` (`statistics`),
//! the same report `sdiag` prints (`server/diag.rs`).

use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::diag::{DiagReport, RpcCount};

use super::envelope::{number, Error};
use super::{fields, Ctx};
use crate::server::input::Request;

pub(super) async fn diag(ctx: Ctx) -> Response {
    match ctx.app.ask(Request::Diag).await {
        Ok(r) => {
            let r = crate::server::diag::complete(&ctx.app, r);
            ctx.ok(fields([("statistics", statistics(&r))]))
        }
        Err(e) => ctx.fail(
            fields([("statistics", json!({}))]),
            Error::from_api(&e, "slurm_get_statistics"),
        ),
    }
}

/// A mean, as Slurm computes it (integer division, 0 for no cycles).
fn mean(sum: u64, n: u32) -> u64 {
    sum.checked_div(u64::from(n)).unwrap_or(0)
}

fn statistics(r: &DiagReport) -> Value {
    let m = &r.main;
    let b = &r.backfill;
    let minutes = ((r.now - r.since).max(0) / 60) as u64;
    let pairs: Vec<(&str, Value)> = vec![
        ("req_time", json!(number(r.now))),
        ("req_time_start", json!(number(r.since))),
        ("server_thread_count", json!(r.server_threads)),
        ("agent_queue_size", json!(0)),
        ("agent_count", json!(0)),
        ("agent_thread_count", json!(0)),
        ("dbd_agent_queue_size", json!(0)),
        ("gettimeofday_latency", json!(r.clock_latency_us)),
        ("schedule_cycle_max", json!(m.max_us)),
        ("schedule_cycle_last", json!(m.last_us)),
        ("schedule_cycle_sum", json!(m.sum_us)),
        ("schedule_cycle_total", json!(m.cycles)),
        ("schedule_cycle_mean", json!(mean(m.sum_us, m.cycles))),
        (
            "schedule_cycle_mean_depth",
            json!(mean(m.depth_sum, m.cycles)),
        ),
        (
            "schedule_cycle_per_minute",
            json!(u64::from(m.cycles)
                .checked_div(minutes)
                .unwrap_or(u64::from(m.cycles))),
        ),
        ("schedule_cycle_depth", json!(m.depth_sum)),
        ("schedule_queue_length", json!(m.queue_len)),
        ("jobs_submitted", json!(r.jobs.submitted)),
        ("jobs_started", json!(r.jobs.started)),
        ("jobs_completed", json!(r.jobs.completed)),
        ("jobs_canceled", json!(r.jobs.canceled)),
        ("jobs_failed", json!(r.jobs.failed)),
        ("jobs_pending", json!(r.pending)),
        ("jobs_running", json!(r.running)),
        ("job_states_ts", json!(number(r.states_at))),
        ("bf_backfilled_jobs", json!(b.backfilled_total)),
        ("bf_last_backfilled_jobs", json!(b.backfilled)),
        ("bf_backfilled_het_jobs", json!(0)),
        ("bf_cycle_counter", json!(b.cycles)),
        ("bf_cycle_mean", json!(mean(b.sum_us, b.cycles))),
        ("bf_depth_mean", json!(mean(b.depth_sum, b.cycles))),
        ("bf_depth_mean_try", json!(mean(b.depth_try_sum, b.cycles))),
        ("bf_cycle_sum", json!(b.sum_us)),
        ("bf_cycle_last", json!(b.last_us)),
        ("bf_cycle_max", json!(b.max_us)),
        ("bf_last_depth", json!(b.last_depth)),
        ("bf_last_depth_try", json!(b.last_depth_try)),
        ("bf_depth_sum", json!(b.depth_sum)),
        ("bf_depth_try_sum", json!(b.depth_try_sum)),
        ("bf_queue_len", json!(b.queue_len)),
        ("bf_queue_len_mean", json!(mean(b.queue_len_sum, b.cycles))),
        ("bf_queue_len_sum", json!(b.queue_len_sum)),
        ("bf_table_size", json!(b.table_size)),
        ("bf_table_size_sum", json!(b.table_size_sum)),
        (
            "bf_table_size_mean",
            json!(mean(b.table_size_sum, b.cycles)),
        ),
        (
            "bf_when_last_cycle",
            json!(number(b.last_when.unwrap_or(0))),
        ),
        ("bf_active", json!(false)),
        (
            "rpcs_by_message_type",
            json!(r
                .by_type
                .iter()
                .map(|c| rpc(c, "message_type", json!(c.name)))
                .collect::<Vec<_>>()),
        ),
        (
            "rpcs_by_user",
            json!(r
                .by_user
                .iter()
                .map(|c| rpc(c, "user", json!(c.name)))
                .collect::<Vec<_>>()),
        ),
    ];
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// One line of the requests served: by type (`type_id`, `message_type`) or by user
/// (`user_id`, `user`).
fn rpc(c: &RpcCount, key: &str, name: Value) -> Value {
    let id_key = if key == "user" { "user_id" } else { "type_id" };
    json!({
        id_key: c.id,
        key: name,
        "count": c.count,
        "average_time": number(c.ave_us() as i64),
        "total_time": c.total_us,
    })
}
