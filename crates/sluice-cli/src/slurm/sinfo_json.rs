//! `sinfo --json`: the document Slurm 22.05 prints (its `openapi/v0.0.38` nodes
//! handler): `meta`, `errors` and `nodes`, one object per node with the same keys in
//! the same order and the same value types, so that exporters reading it
//! (`.nodes[].state`, `.alloc_cpus`, `.alloc_memory`, `.partitions`) work unchanged.
//! 22.05 has no partition list here. Figures Sluice does not measure (load, free
//! memory, boot time) have Slurm's value for "not known".

use sluice_proto::types::NodeInfo;

use super::common::RELEASE;
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
                    Json::object([("version", version), ("release", Json::str(RELEASE))]),
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
    // What a node's daemon tells at registration: Slurm keeps NULL until then, which
    // its JSON writer prints as "".
    let registered = n.agent_start.is_some();
    let learnt = |s: &str| Json::str(if registered { s } else { "" });
    Json::object([
        ("architecture", learnt(std::env::consts::ARCH)),
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
        ("operating_system", learnt(os)),
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
        ("slurmd_version", learnt(RELEASE)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn node_named(name: &str, agent_start: Option<i64>) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            state: "idle".into(),
            cpus: 4,
            memory: 4000,
            sockets: 1,
            cores_per_socket: 4,
            threads_per_core: 1,
            agent_up: agent_start.is_some(),
            agent_start,
            ..Default::default()
        }
    }

    /// What a node's daemon tells at registration is "" until it registered, as
    /// 22.05's writer prints its NULL strings; a registered node has its own.
    #[test]
    fn a_node_that_never_registered_has_no_architecture_system_or_version() {
        let text = document(&[
            node_named("n1", Some(1_700_000_000)),
            node_named("n3", None),
        ]);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let field = |i: usize, key: &str| doc["nodes"][i][key].as_str().unwrap().to_owned();
        assert_eq!(field(0, "architecture"), std::env::consts::ARCH);
        assert_eq!(field(0, "slurmd_version"), "22.05.8");
        assert_eq!(field(0, "operating_system"), os());
        for key in ["architecture", "operating_system", "slurmd_version"] {
            assert_eq!(field(1, key), "", "{key}");
        }
        assert_eq!(doc["nodes"][1]["slurmd_start_time"], 0);
    }
}
