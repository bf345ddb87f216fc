//! `sinfo --json`: the document Slurm 22.05 prints (its `openapi/v0.0.38` nodes
//! handler): `meta`, `errors` and `nodes`, one object per node with the same keys in
//! the same order and the same value types, so that exporters reading it
//! (`.nodes[].state`, `.alloc_cpus`, `.alloc_memory`, `.partitions`) work unchanged.
//! 22.05 has no partition list here. Figures Sluice does not measure (load, free
//! memory, boot time) have Slurm's value for "not known".

use sluice_proto::types::NodeInfo;

use super::json_c::Json;
use super::scontrol_show::{node_state, os};

/// The whole document for `nodes`.
pub fn document(nodes: &[NodeInfo]) -> String {
    let version = Json::object([
        ("major", Json::Int(22)),
        ("micro", Json::Int(8)),
        ("minor", Json::Int(5)),
    ]);
    let os = os();
    Json::object([
        (
            "meta",
            Json::object([
                (
                    "plugin",
                    Json::object([
                        ("type", Json::str("openapi/v0.0.38")),
                        ("name", Json::str("Slurm OpenAPI v0.0.38")),
                    ]),
                ),
                (
                    "Slurm",
                    Json::object([("version", version), ("release", Json::str("22.05.8"))]),
                ),
            ]),
        ),
        ("errors", Json::List(vec![])),
        (
            "nodes",
            Json::List(nodes.iter().map(|n| node(n, &os)).collect()),
        ),
    ])
    .render()
}

/// A user's name from a uid, as Slurm's `uid_to_string_or_null`.
fn user_name(uid: u32) -> Json {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or(Json::Null, |u| Json::str(u.name))
}

fn node(n: &NodeInfo, os: &str) -> Json {
    let or_empty = |s: &str| Json::str(s);
    let name_or = |s: &str| {
        if s.is_empty() {
            Json::str(&n.name)
        } else {
            Json::str(s)
        }
    };
    // `IDLE+DRAIN+NOT_RESPONDING`: the base state in lower case, the rest as flags.
    let full = node_state(n);
    let mut parts = full.split('+');
    let state = parts.next().unwrap_or_default().to_ascii_lowercase();
    let flags: Vec<Json> = parts.map(Json::str).collect();
    let features = n.features.join(",");
    let int = |v: u64| Json::Int(v as i64);
    Json::object([
        ("architecture", Json::str(std::env::consts::ARCH)),
        ("burstbuffer_network_address", or_empty("")),
        ("boards", Json::Int(1)),
        ("boot_time", Json::Int(0)),
        ("comment", or_empty("")),
        ("cores", int(u64::from(n.cores_per_socket))),
        ("cpu_binding", Json::Int(0)),
        ("cpu_load", Json::Int(0)),
        ("extra", or_empty("")),
        ("free_memory", Json::Int(0)),
        ("cpus", int(u64::from(n.cpus))),
        ("last_busy", Json::Int(n.last_busy.unwrap_or(0))),
        ("features", or_empty(&features)),
        ("active_features", or_empty(&features)),
        ("gres", or_empty(&n.gres)),
        ("gres_drained", Json::str("N/A")),
        ("gres_used", or_empty("")),
        ("mcs_label", or_empty("")),
        ("name", Json::str(&n.name)),
        ("next_state_after_reboot", Json::str("invalid")),
        ("address", name_or(&n.node_addr)),
        ("hostname", name_or(&n.node_hostname)),
        ("state", Json::Str(state)),
        ("state_flags", Json::List(flags)),
        ("next_state_after_reboot_flags", Json::List(vec![])),
        ("operating_system", Json::str(os)),
        ("owner", Json::Null),
        (
            "partitions",
            Json::List(n.partitions.iter().map(Json::str).collect()),
        ),
        ("port", Json::Int(n.port.map_or(0, i64::from))),
        ("real_memory", int(n.memory)),
        ("reason", or_empty(n.reason.as_deref().unwrap_or(""))),
        (
            "reason_changed_at",
            Json::Int(n.reason_set.map_or(0, |(_, t)| t)),
        ),
        (
            "reason_set_by_user",
            n.reason_set.map_or(Json::Null, |(uid, _)| user_name(uid)),
        ),
        ("slurmd_start_time", Json::Int(n.agent_start.unwrap_or(0))),
        ("sockets", int(u64::from(n.sockets))),
        ("threads", int(u64::from(n.threads_per_core))),
        ("temporary_disk", Json::Int(0)),
        ("weight", int(u64::from(n.weight))),
        ("tres", or_empty(&n.cfg_tres)),
        ("slurmd_version", Json::str("22.05.8")),
        ("alloc_memory", int(n.memory_alloc)),
        ("alloc_cpus", int(u64::from(n.cpus_alloc))),
        (
            "idle_cpus",
            int(u64::from(n.cpus.saturating_sub(n.cpus_alloc))),
        ),
        (
            "tres_used",
            if n.alloc_tres.is_empty() {
                Json::Null
            } else {
                Json::str(&n.alloc_tres)
            },
        ),
        ("tres_weighted", Json::Float(f64::from(n.cpus_alloc))),
    ])
}
