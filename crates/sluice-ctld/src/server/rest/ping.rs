//! `GET /slurm/v0.0.44/ping`: whether the controller answers, and how fast (Slurm's
//! `CONTROLLER_PING`: `hostname`, `pinged`, `responding`, `latency` in microseconds,
//! `mode`, `primary`). The controller's loop is asked, so a controller whose loop
//! does not answer is not `responding`.

use axum::response::Response;
use serde_json::json;

use super::{fields, Ctx};
use crate::server::input::Request;

pub(super) async fn ping(ctx: Ctx) -> Response {
    let began = std::time::Instant::now();
    let responding = ctx.app.ask(Request::Diag).await.is_ok();
    let latency = began.elapsed().as_micros().min(u128::from(u64::MAX)) as u64;
    ctx.ok(fields([(
        "pings",
        json!([{
            "hostname": crate::config::this_host(),
            "pinged": if responding { "UP" } else { "DOWN" },
            "responding": responding,
            "latency": latency,
            "mode": "primary",
            "primary": true,
        }]),
    )]))
}
