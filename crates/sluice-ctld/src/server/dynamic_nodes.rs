//! `scontrol create nodename=...` and `scontrol delete nodename=...` (dynamic nodes, super
//! users only: root, `SlurmUser`, administrators). The node line is parsed here, off the
//! loop, as slurm.conf's `NodeName=` lines are; the loop adds or removes the nodes (see
//! `state/node_changes.rs`).

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use sluice_proto::error::ApiError;

use super::input::Request;
use super::routes::reply;
use super::{refuse, App, Peer};
use crate::config::ClusterConfig;

/// `POST /v1/nodes/create`'s and `POST /v1/nodes/delete`'s body.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NodeLineRequest {
    /// The `NodeName=...` line (create), or the node names (delete).
    pub line: String,
}

/// Node line `line` (`NodeName=... CPUs=...`) read as slurm.conf's would be, alone in
/// a cluster of its own. Errors: Slurm's "Failed to parse nodeline".
pub fn parse_node_line(line: &str) -> Result<ClusterConfig, ApiError> {
    let failed = || ApiError::invalid(format!("Failed to parse nodeline '{line}'"));
    if line.contains('\n') || !line.trim().to_ascii_lowercase().starts_with("nodename=") {
        return Err(failed());
    }
    let dir = std::env::temp_dir().join(format!(
        "sluice-nodeline-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).map_err(|_| failed())?;
    let path = dir.join("slurm.conf");
    // The GRES it names are this file's `GresTypes` (the cluster's are checked when
    // the node joins).
    let mut types: Vec<&str> = line
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| k.eq_ignore_ascii_case("gres"))
        .flat_map(|(_, v)| v.split(','))
        .filter_map(|g| g.split(':').next())
        .filter(|g| !g.is_empty() && !g.eq_ignore_ascii_case("(null)"))
        .collect();
    types.sort_unstable();
    types.dedup();
    let gres_types = if types.is_empty() {
        String::new()
    } else {
        format!("GresTypes={}\n", types.join(","))
    };
    let text = format!("ClusterName=dynamic\n{gres_types}{}\n", line.trim());
    let read = std::fs::write(&path, text)
        .map_err(|_| failed())
        .and_then(|()| ClusterConfig::read(&path).map_err(|_| failed()));
    let _ = std::fs::remove_dir_all(&dir);
    let (conf, warnings) = read?;
    // A layout whose CPUs were reset is said of the line (the file it was written to
    // is gone); the file's other warnings are of the stand-in file around the line.
    for w in warnings.iter().filter(|w| w.contains("match no Sockets")) {
        let what = w.split_once(": ").map_or(w.as_str(), |(_, m)| m);
        tracing::warn!("node line {:?}: {what}", line.trim());
    }
    if conf.cluster.nodes.is_empty() {
        return Err(failed());
    }
    Ok(conf)
}

/// `POST /v1/nodes/create` (super users: root, `SlurmUser`, administrators).
pub(super) async fn create(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    body: axum::body::Bytes,
) -> Response {
    let caller = app.super_caller(peer);
    if !caller.admin {
        return refuse(ApiError::not_super_user());
    }
    let Ok(req) = serde_json::from_slice::<NodeLineRequest>(&body) else {
        return refuse(ApiError::invalid("malformed request"));
    };
    let line = req.line.clone();
    let conf = match tokio::task::spawn_blocking(move || parse_node_line(&line)).await {
        Ok(Ok(c)) => Box::new(c),
        Ok(Err(e)) => return refuse(e),
        Err(e) => return refuse(ApiError::invalid(e.to_string())),
    };
    let r = app
        .ask(|reply| Request::CreateNodes {
            line: req.line,
            conf,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|()| sluice_proto::types::Done {}))
}

/// `POST /v1/nodes/delete` (super users).
pub(super) async fn delete(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    body: axum::body::Bytes,
) -> Response {
    let caller = app.super_caller(peer);
    if !caller.admin {
        return refuse(ApiError::not_super_user());
    }
    let Ok(req) = serde_json::from_slice::<NodeLineRequest>(&body) else {
        return refuse(ApiError::invalid("malformed request"));
    };
    let r = app
        .ask(|reply| Request::DeleteNodes {
            names: req.line,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r)
}
