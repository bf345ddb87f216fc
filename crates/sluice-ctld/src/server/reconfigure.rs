//! `scontrol reconfigure`: slurm.conf read again without a restart. What it can change
//! while jobs run is the nodes (added, changed or removed; a node with running jobs may
//! not change or leave) and the partitions (their states, limits, members and access
//! lists, slurm.conf's again where `scontrol update` changed them, as Slurm does); any
//! other change of slurm.conf or of the files beside it (`ClusterName`,
//! `SlurmctldHost`, `StateSaveLocation`, `AuthType`, scheduling, priority, gres.conf,
//! ...) is refused, naming the first such line, changes nothing, and needs a restart of
//! the controller — rather than being read and silently left unapplied.
//!
//! The files are read here, off the loop; the loop takes the new nodes and partitions.

use std::path::{Path, PathBuf};

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::response::Response;
use sluice_proto::error::ApiError;

use super::input::Request;
use super::routes::reply;
use super::{refuse, App, Peer};
use crate::config::ClusterConfig;

/// The files beside slurm.conf that the controller reads at start.
const BESIDE: &[&str] = &["gres.conf", "cgroup.conf", "cohorts.conf", "sluice.conf"];

/// What of the configuration may not change without a restart: every line of slurm.conf
/// but its `NodeName=` and `PartitionName=` ones (comments, blank lines and spacing aside), then the
/// files beside it as they are.
pub(super) fn fixed_part(slurm_conf: &Path) -> std::io::Result<Vec<String>> {
    let text = std::fs::read_to_string(slurm_conf)?;
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            !l.is_empty() && !l.starts_with("partitionname=") && !l.starts_with("nodename=")
        })
        .collect();
    let dir = slurm_conf.parent().unwrap_or(Path::new("."));
    for f in BESIDE {
        if let Ok(t) = std::fs::read_to_string(dir.join(f)) {
            lines.extend(t.lines().map(|l| format!("{f}: {}", l.trim_end())));
        }
    }
    Ok(lines)
}

/// The slurm.conf a controller was started from, and its fixed part then.
#[derive(Clone, Debug)]
pub struct StartConf {
    /// The file.
    pub path: PathBuf,
    /// [`fixed_part`] at start.
    pub fixed: Vec<String>,
}

impl StartConf {
    /// `path` as it is now.
    pub fn read(path: &Path) -> std::io::Result<StartConf> {
        Ok(StartConf {
            path: path.to_path_buf(),
            fixed: fixed_part(path)?,
        })
    }
}

/// `start`'s file read again (with its digest, [`super::conf_hash`]), or why it cannot
/// be taken.
fn read_again(start: &StartConf) -> Result<(ClusterConfig, String), ApiError> {
    let fixed = fixed_part(&start.path)
        .map_err(|e| ApiError::invalid(format!("{}: {e}", start.path.display())))?;
    if let Some(line) = fixed
        .iter()
        .zip(start.fixed.iter().map(Some).chain(std::iter::repeat(None)))
        .find(|(new, old)| Some(*new) != *old)
        .map(|(new, _)| new.clone())
        .or_else(|| start.fixed.get(fixed.len()).cloned())
    {
        return Err(ApiError::invalid(format!(
            "only nodes and partitions change without a restart; restart the controller for this change: {line}"
        )));
    }
    let (conf, warnings) =
        ClusterConfig::read(&start.path).map_err(|e| ApiError::invalid(e.to_string()))?;
    for w in warnings {
        tracing::warn!("{w}");
    }
    let text = std::fs::read(&start.path)
        .map_err(|e| ApiError::invalid(format!("{}: {e}", start.path.display())))?;
    Ok((conf, super::conf_hash(&text)))
}

/// `POST /v1/reconfigure` (super users: root, `SlurmUser`, administrators): answered once the loop has the new partitions.
pub(super) async fn reconfigure(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    // Read whole before answering, so that a refusal never meets a client still sending.
    _body: axum::body::Bytes,
) -> Response {
    let caller = app.super_caller(peer);
    if !caller.admin {
        return refuse(ApiError::not_super_user());
    }
    let Some(start) = app.start_conf.clone() else {
        return refuse(ApiError::invalid(
            "this controller was started without a slurm.conf: there is nothing to read again",
        ));
    };
    // Users and groups are looked up afresh from now on, as Slurm's cache of names.
    super::names::forget();
    let (conf, conf_hash) = match tokio::task::spawn_blocking(move || read_again(&start)).await {
        Ok(Ok((c, hash))) => (Box::new(c), hash),
        Ok(Err(e)) => return refuse(e),
        Err(e) => return refuse(ApiError::invalid(e.to_string())),
    };
    let r = app
        .ask(|reply| Request::Reconfigure {
            conf,
            conf_hash,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|()| sluice_proto::types::Done {}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_node_and_partition_lines_may_change() {
        let dir = std::env::temp_dir().join(format!("sluice-reconf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("slurm.conf");
        let conf =
            "ClusterName=c\nNodeName=n1 CPUs=2\n# a comment\nPartitionName=p Nodes=n1 MaxTime=10\n";
        std::fs::write(&path, conf).unwrap();
        let start = StartConf::read(&path).unwrap();
        assert_eq!(start.fixed, ["ClusterName=c"]);
        std::fs::write(
            &path,
            "ClusterName=c\n\nNodeName=n[1-2] CPUs=4   # more\nPartitionName=p Nodes=n1 MaxTime=20 State=DOWN\n",
        )
        .unwrap();
        let again = read_again(&start).unwrap().0.cluster;
        assert_eq!(again.partitions[0].max_time, Some(20 * 60));
        assert_eq!(again.nodes.len(), 2);
        std::fs::write(
            &path,
            "ClusterName=d\nNodeName=n1 CPUs=4\nPartitionName=p Nodes=n1\n",
        )
        .unwrap();
        assert_eq!(
            read_again(&start).unwrap_err().message,
            "only nodes and partitions change without a restart; restart the controller for this change: ClusterName=d"
        );
        std::fs::write(&path, "NodeName=n1 CPUs=2\nPartitionName=p Nodes=n1\n").unwrap();
        assert!(read_again(&start)
            .unwrap_err()
            .message
            .ends_with("ClusterName=c"));
        std::fs::write(&path, conf).unwrap();
        std::fs::write(dir.join("gres.conf"), "Name=gpu File=/dev/null\n").unwrap();
        assert!(read_again(&start)
            .unwrap_err()
            .message
            .ends_with("gres.conf: Name=gpu File=/dev/null"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
