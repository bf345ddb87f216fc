//! `sdiag`: the loop's counters (scheduler cycles, jobs), with the requests served and
//! the server's own figures added here.

use std::sync::atomic::Ordering;

use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use sluice_proto::diag::DiagReport;

use super::input::Request;
use super::routes::reply;
use super::{rpc_stats, App, Peer};

/// The report.
pub(super) async fn report(State(app): State<App>) -> Response {
    let r = app.ask(Request::Diag).await;
    reply(r.map(|loop_part| complete(&app, loop_part)))
}

/// `sdiag -r`: clears the counters (operators only: root, `SlurmUser`, `AdminLevel`
/// Operator or Administrator, Slurm's `validate_operator`), and answers the report after.
pub(super) async fn reset(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    _: axum::body::Bytes,
) -> Response {
    let caller = app.operator_caller(peer);
    let r = app
        .ask(|reply| Request::DiagReset { caller, reply })
        .await
        .and_then(|r| r);
    if r.is_ok() {
        rpc_stats::lock(&app.rpc).reset();
    }
    let r = match r {
        Ok(()) => app.ask(Request::Diag).await,
        Err(e) => Err(e),
    };
    reply(r.map(|loop_part| complete(&app, loop_part)))
}

/// The loop's part with the server's added.
pub(super) fn complete(app: &App, mut r: DiagReport) -> DiagReport {
    r.server_threads = app.in_flight.load(Ordering::Relaxed);
    (r.by_type, r.by_user) = rpc_stats::lock(&app.rpc).report();
    r.clock_latency_us = clock_latency_us();
    r
}

/// Microseconds for 1,000 readings of the wall clock (slurmctld's "latency for 1000
/// calls to gettimeofday()").
fn clock_latency_us() -> u32 {
    let began = std::time::Instant::now();
    let mut last = std::time::UNIX_EPOCH;
    for _ in 0..1000 {
        last = std::hint::black_box(std::time::SystemTime::now());
    }
    std::hint::black_box(last);
    began.elapsed().as_micros().min(u128::from(u32::MAX)) as u32
}
