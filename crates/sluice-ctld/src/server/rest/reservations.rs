//! `GET reservations` and `GET reservation/{name}`: the reservations as `scontrol show
//! reservation` sees them, in Slurm's `RESERVATION_INFO` shape.

use axum::extract::{Path, Query};
use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::reservations::ReservationRecord;

use super::changes;
use super::envelope::{errno, maybe, number, Error};
use super::{fields, Ctx};
use crate::server::input::Request;

/// A reservation in Slurm's `RESERVATION_INFO` shape (v0.0.44), the fields Sluice keeps.
pub(super) fn reservation(r: &ReservationRecord) -> Value {
    // As `scontrol show reservation` prints them.
    let tres = match r.gpus {
        Some(_) => format!("gres/gpu={}", r.gpus_per_node.iter().sum::<u32>()),
        None => format!("cpu={}", r.cores),
    };
    json!({
        "accounts": r.accounts.join(","),
        "burst_buffer": "",
        "core_count": r.cores,
        "core_specializations": [],
        "end_time": number(r.end),
        "features": "",
        "flags": r.flags,
        "groups": "",
        "licenses": "",
        "max_start_delay": 0,
        "name": r.name,
        "node_count": r.nodes.len(),
        "node_list": sluice_conf::hostlist::compress(&r.nodes),
        "partition": r.partition.clone().unwrap_or_default(),
        "purge_completed": {"time": maybe(r.purge_after)},
        "start_time": number(r.start),
        "tres": tres,
        "users": r.users.join(","),
    })
}

async fn reservations(ctx: &Ctx) -> Result<Vec<ReservationRecord>, Error> {
    ctx.app
        .ask(Request::Reservations)
        .await
        .map_err(|e| Error::from_api(&e, "slurm_load_reservations()"))
}

/// `GET reservations[?update_time=T]` (none, with a warning, when none changed since
/// `T`).
pub(super) async fn list(
    ctx: Ctx,
    query: Result<Query<changes::ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let now = crate::server::now();
    let empty = || fields([("reservations", json!([]))]);
    let since = match changes::since(query, "_get_reservations") {
        Ok(t) => t,
        Err(e) => return ctx.fail(empty(), e),
    };
    match reservations(&ctx).await {
        Ok(all) => {
            let shown = Value::Array(all.iter().map(reservation).collect());
            let updated = changes::last_change(&ctx.app.incarnation, "reservations", &shown, now);
            if changes::unchanged(since, updated) {
                return ctx.ok_warned(
                    fields([
                        ("reservations", json!([])),
                        ("last_update", number(updated)),
                    ]),
                    &[changes::warning("reservation", since.unwrap_or_default())],
                );
            }
            ctx.ok(fields([
                ("reservations", shown),
                ("last_update", number(updated)),
            ]))
        }
        Err(e) => ctx.fail(empty(), e),
    }
}

/// `GET reservation/{name}` (by name, case blind, as Slurm finds it).
pub(super) async fn one(ctx: Ctx, Path(name): Path<String>) -> Response {
    let now = crate::server::now();
    let empty = || fields([("reservations", json!([]))]);
    match reservations(&ctx).await {
        Ok(all) => {
            let shown = Value::Array(all.iter().map(reservation).collect());
            let updated = changes::last_change(&ctx.app.incarnation, "reservations", &shown, now);
            match all.iter().find(|r| r.name.eq_ignore_ascii_case(&name)) {
                Some(r) => ctx.ok(fields([
                    ("reservations", json!([reservation(r)])),
                    ("last_update", number(updated)),
                ])),
                None => ctx.fail(
                    empty(),
                    Error::new(
                        errno::REST_INVALID_QUERY,
                        format!("Unable to find reservation {name}"),
                        "_get_single_reservation",
                    ),
                ),
            }
        }
        Err(e) => ctx.fail(empty(), e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_in_slurms_shape() {
        let r = ReservationRecord {
            name: "maint".into(),
            start: 100,
            end: 200,
            nodes: vec!["n1".into(), "n2".into()],
            users: vec!["root".into()],
            flags: vec!["MAINT".into(), "SPEC_NODES".into()],
            cores: 8,
            ..Default::default()
        };
        let v = reservation(&r);
        assert_eq!(v["name"], "maint");
        assert_eq!(v["node_list"], "n[1-2]");
        assert_eq!(v["node_count"], 2);
        assert_eq!(v["core_count"], 8);
        assert_eq!(v["tres"], "cpu=8");
        assert_eq!(v["users"], "root");
        assert_eq!(v["flags"], json!(["MAINT", "SPEC_NODES"]));
        assert_eq!(v["start_time"], number(100));
        assert_eq!(v["purge_completed"]["time"]["set"], false);
    }
}
