//! The audit trail as the controller records it and `sluice audit` reads it: every
//! scheduling decision about a job, with its cause, and who held which device when.
//!
//! An event's JSON is one object: `seq`, `time` (Unix seconds), `job_id`, `uid` (the
//! job's owner), `kind` and `detail` (what [`AuditWhat`] holds for that kind), which is
//! also the line format of `sluice audit --json`.
//!
//! Who someone is may be hidden from the reader: under slurm.conf's `PrivateData=users`
//! a user who is not an operator sees other users' jobs' events without their owners
//! (`uid`, the detail's `user` and a [`JobRef`]'s `uid` are `null`) and without who
//! acted on them (`by` is `null`), unless that was the reader. The controller always
//! records them; only what it serves is redacted.

use serde::{Deserialize, Serialize};

use crate::types::JobState;

/// One recorded event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// Order of recording (the database's sequence number); 0 before it is stored.
    #[serde(default)]
    pub seq: u64,
    /// When, Unix seconds.
    pub time: i64,
    /// The job.
    pub job_id: u64,
    /// The job's owner; `None` when hidden from the reader (`PrivateData=users`).
    pub uid: Option<u32>,
    /// What happened, and why.
    #[serde(flatten)]
    pub what: AuditWhat,
}

/// A job named in another job's event (a preemptor, a victim). Both fields are `None`
/// when the reader may not see that job (another user's under `PrivateData=jobs`, for a
/// user who is not an operator); `uid` alone is `None` when the reader may see the job
/// but not whose it is (`PrivateData=users`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRef {
    /// Its id.
    pub job: Option<u64>,
    /// Its owner.
    pub uid: Option<u32>,
}

/// What a job held on one node: the node, the GPU indices and their device files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeDevices {
    /// Node name.
    pub node: String,
    /// GPU indices (whole GPUs, or those its shards come from).
    #[serde(default)]
    pub gpus: Vec<u32>,
    /// The GPUs' device files, as gres.conf names them (none for count-only GPUs).
    #[serde(default)]
    pub files: Vec<String>,
}

/// Which rule let one job preempt another.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptRule {
    /// `partition_prio` (`PreemptType=preempt/partition_prio`), `qos`
    /// (`preempt/qos`) or `cohort_reclaim` (an account taking back its cohort quota).
    pub rule: String,
    /// What the preemptor has that wins: `partition high (PriorityTier=10)`, `QOS
    /// urgent`, `account vision (cohort ml)`.
    pub winner: String,
    /// What the victim has that loses: `partition low (PriorityTier=1)`, `QOS
    /// scavenger`, `account nlp (borrowing)`.
    pub loser: String,
}

/// Why a job went back to the queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RequeueCause {
    /// `scontrol requeue` by this uid.
    Request {
        /// Who asked (uid); `None` when hidden from the reader.
        by: Option<u32>,
    },
    /// Preempted in `REQUEUE` mode.
    Preempted {
        /// The preemptor.
        by: JobRef,
    },
    /// Its node failed (its agent was lost or refused the launch).
    NodeFail,
    /// The cluster was stopped cleanly (`sluice up` stopping): its agents ended the
    /// run, and the next start put the job back in the queue.
    Shutdown,
}

/// What happened to a job, with its cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum AuditWhat {
    /// Submitted by its owner.
    Submitted {
        /// The owner's name; `None` when hidden from the reader.
        user: Option<String>,
        /// Partition.
        partition: String,
        /// Account.
        account: String,
        /// QOS.
        qos: String,
    },
    /// Held (`scontrol hold`, `uhold`, `sbatch --hold`).
    Held {
        /// Who held it (uid); `None` when hidden from the reader.
        by: Option<u32>,
        /// An operator's hold (`JobHeldAdmin`).
        admin: bool,
    },
    /// Released (`scontrol release`).
    Released {
        /// Who released it (uid); `None` when hidden from the reader.
        by: Option<u32>,
    },
    /// Its processes stopped by an operator (`scontrol suspend`).
    Suspended {
        /// Who suspended it (uid); `None` when hidden from the reader.
        by: Option<u32>,
    },
    /// Its processes let continue (`scontrol resume`).
    Resumed {
        /// Who resumed it (uid); `None` when hidden from the reader.
        by: Option<u32>,
    },
    /// Changed by `scontrol update` (its time limit, partition, nice, begin time...).
    Updated {
        /// Who changed it (uid); `None` when hidden from the reader.
        by: Option<u32>,
        /// What changed, as `scontrol update` names it: `TimeLimit=00:10:00`,
        /// `Partition=short`...
        changes: Vec<String>,
    },
    /// Cancelled (`scancel`).
    Cancelled {
        /// Who cancelled it (uid); `None` when hidden from the reader.
        by: Option<u32>,
        /// The state it was in.
        state: JobState,
    },
    /// Back in the queue under its id.
    Requeued {
        /// The run that ended (its restart count then).
        run: u32,
        /// The state that run is kept in (`REQUEUED`, `PREEMPTED`).
        ended_as: JobState,
        /// Why.
        cause: RequeueCause,
        /// What the run let go of (empty when it was not running).
        released: Vec<NodeDevices>,
    },
    /// Started by a scheduling pass.
    Started {
        /// The run (restart count).
        run: u32,
        /// `main`, `backfill`, `reservation` or `preempt`.
        pass: String,
        /// Its priority then.
        priority: u32,
        /// Its place among the jobs queued in its partition when the pass began (1:
        /// first).
        rank: Option<u32>,
        /// Partition.
        partition: String,
        /// The advance reservation it ran in.
        reservation: Option<String>,
        /// The owner's name; `None` when hidden from the reader.
        user: Option<String>,
        /// Nodes, GPUs and device files.
        nodes: Vec<NodeDevices>,
    },
    /// The last backfill pass planned a start for it, or moved it: the core's planned
    /// start (a backfill reservation; in the simulator's `conservative` and `easy`
    /// policies their reservation or shadow time), what Slurm's `squeue --start`
    /// would show. Not the controller's forecast, which Sluice's `squeue --start` and
    /// `sluice explain` show.
    Planned {
        /// The planned start before (Unix seconds); `None`: none before.
        from: Option<i64>,
        /// The planned start now (Unix seconds).
        to: i64,
    },
    /// Its pending reason changed (Slurm's reason code, as squeue shows it).
    Reason {
        /// The reason before; `None`: its first.
        from: Option<String>,
        /// The reason now.
        to: String,
        /// The reason is a limit reached (an association, QOS or cohort limit).
        limit: bool,
    },
    /// Chosen as a preemption victim: signalled now, ended after its grace.
    Preempted {
        /// The job it makes room for.
        by: JobRef,
        /// The rule.
        rule: PreemptRule,
        /// `CANCEL` or `REQUEUE`.
        mode: String,
        /// Seconds between the signal and the end.
        grace: i64,
    },
    /// Preempted other jobs to make room for itself.
    Preempting {
        /// The victims chosen in this pass.
        victims: Vec<JobRef>,
        /// The rule.
        rule: PreemptRule,
    },
    /// Its GPUs have stayed idle (sluice.conf's `IdleGpuThreshold` for `IdleGpuTime`).
    IdleGpus {
        /// How many of how many, since when, under which threshold.
        gpus: crate::usage::IdleGpus,
    },
    /// A service's process was started again in place (`state/service.rs`).
    ServiceRestarted {
        /// The run (requeue count) it belongs to.
        run: u32,
        /// Its restarts in place so far, this one included (over all runs).
        restart: u32,
        /// Why: its process exited, or its health check failed.
        cause: crate::service::RestartCause,
        /// Exit code of the process it replaced.
        exit_code: i32,
        /// Terminating signal of the process it replaced.
        signal: i32,
    },
    /// Ended.
    Ended {
        /// The run that ended.
        run: u32,
        /// Final state.
        state: JobState,
        /// Exit code of the batch script or allocation.
        exit_code: i32,
        /// Terminating signal.
        signal: i32,
        /// What it let go of.
        released: Vec<NodeDevices>,
    },
}

impl AuditWhat {
    /// The event's kind, as stored and as `--json` writes it (`started`, `reason`...).
    pub fn kind(&self) -> &'static str {
        match self {
            AuditWhat::Submitted { .. } => "submitted",
            AuditWhat::Held { .. } => "held",
            AuditWhat::Released { .. } => "released",
            AuditWhat::Suspended { .. } => "suspended",
            AuditWhat::Resumed { .. } => "resumed",
            AuditWhat::Updated { .. } => "updated",
            AuditWhat::Cancelled { .. } => "cancelled",
            AuditWhat::Requeued { .. } => "requeued",
            AuditWhat::Started { .. } => "started",
            AuditWhat::Planned { .. } => "planned",
            AuditWhat::Reason { .. } => "reason",
            AuditWhat::Preempted { .. } => "preempted",
            AuditWhat::Preempting { .. } => "preempting",
            AuditWhat::IdleGpus { .. } => "idle_gpus",
            AuditWhat::ServiceRestarted { .. } => "service_restarted",
            AuditWhat::Ended { .. } => "ended",
        }
    }

    /// The detail alone, as JSON (what the database's `detail` column holds).
    pub fn detail_json(&self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(mut o)) => o
                .remove("detail")
                .map(|d| d.to_string())
                .unwrap_or_else(|| "{}".into()),
            _ => "{}".into(),
        }
    }

    /// The event from its stored kind and detail.
    ///
    /// Errors: an unknown kind, or a detail that does not fit it.
    pub fn from_parts(kind: &str, detail: &str) -> Result<AuditWhat, serde_json::Error> {
        let detail: serde_json::Value = serde_json::from_str(detail)?;
        serde_json::from_value(serde_json::json!({ "kind": kind, "detail": detail }))
    }
}

/// A job run's hold on one node: the GPUs it held there, when, and the event that
/// started the run (its cause).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditHold {
    /// The job; `None` when hidden from the reader.
    pub job_id: Option<u64>,
    /// The run.
    pub run: u32,
    /// The owner; `None` when hidden.
    pub uid: Option<u32>,
    /// The node.
    pub node: String,
    /// The GPU indices held there (those asked about, with `gpu=`).
    pub gpus: Vec<u32>,
    /// From, Unix seconds.
    pub start: i64,
    /// Until (exclusive); `None` while held.
    pub end: Option<i64>,
    /// The start event (pass, priority, rank, user), unless purged or hidden.
    pub cause: Option<AuditEvent>,
}

/// `GET /v1/audit`'s query: a job's events, or a node's (GPU's) holders, in a window.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditQuery {
    /// Only this job's events (and holds).
    pub job: Option<u64>,
    /// With `job`: the events of that array's task of this index (`123_4`).
    #[serde(default)]
    pub task: Option<u32>,
    /// The holds on this node (with `gpu`, of that GPU index).
    pub node: Option<String>,
    /// With `node`: only this GPU index.
    pub gpu: Option<u32>,
    /// From this time on (Unix seconds; inclusive).
    pub since: Option<i64>,
    /// Up to this time (exclusive).
    pub until: Option<i64>,
}

impl AuditQuery {
    /// The query string (`job=12&node=node03`), for `GET /v1/audit?…`.
    pub fn to_query_string(&self) -> String {
        let mut parts = Vec::new();
        if let Some(j) = self.job {
            parts.push(format!("job={j}"));
        }
        if let Some(t) = self.task {
            parts.push(format!("task={t}"));
        }
        if let Some(n) = &self.node {
            let safe: String = n
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect();
            parts.push(format!("node={safe}"));
        }
        if let Some(g) = self.gpu {
            parts.push(format!("gpu={g}"));
        }
        if let Some(s) = self.since {
            parts.push(format!("since={s}"));
        }
        if let Some(u) = self.until {
            parts.push(format!("until={u}"));
        }
        parts.join("&")
    }
}

/// `GET /v1/audit`'s answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditReply {
    /// The events the reader may see, in recording order (for a `job` query, or for a
    /// window without `node`).
    pub events: Vec<AuditEvent>,
    /// The holds the reader may see, by start (for a `node` query).
    pub holds: Vec<AuditHold>,
    /// Events of other users' jobs left out (only counted for readers who are not
    /// operators).
    pub hidden_events: u64,
    /// Holds of other users' jobs left out.
    pub hidden_holds: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_flat_object_and_its_parts_round_trip() {
        let e = AuditEvent {
            seq: 7,
            time: 100,
            job_id: 12,
            uid: Some(1000),
            what: AuditWhat::Reason {
                from: Some("Priority".into()),
                to: "QOSMaxGRESPerUser".into(),
                limit: true,
            },
        };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(
            json,
            r#"{"seq":7,"time":100,"job_id":12,"uid":1000,"kind":"reason","detail":{"from":"Priority","to":"QOSMaxGRESPerUser","limit":true}}"#
        );
        assert_eq!(serde_json::from_str::<AuditEvent>(&json).unwrap(), e);
        assert_eq!(e.what.kind(), "reason");
        let detail = e.what.detail_json();
        assert_eq!(
            detail,
            r#"{"from":"Priority","limit":true,"to":"QOSMaxGRESPerUser"}"#
        );
        assert_eq!(AuditWhat::from_parts("reason", &detail).unwrap(), e.what);
        let cause = RequeueCause::Preempted {
            by: JobRef {
                job: Some(3),
                uid: Some(1001),
            },
        };
        assert_eq!(
            serde_json::to_string(&cause).unwrap(),
            r#"{"type":"preempted","by":{"job":3,"uid":1001}}"#
        );
    }

    #[test]
    fn who_is_hidden_is_null_and_recorded_details_still_read() {
        let hidden = AuditEvent {
            seq: 3,
            time: 100,
            job_id: 12,
            uid: None,
            what: AuditWhat::Held {
                by: None,
                admin: false,
            },
        };
        assert_eq!(
            serde_json::to_string(&hidden).unwrap(),
            r#"{"seq":3,"time":100,"job_id":12,"uid":null,"kind":"held","detail":{"by":null,"admin":false}}"#
        );
        let submitted = AuditWhat::Submitted {
            user: None,
            partition: "low".into(),
            account: "physics".into(),
            qos: "normal".into(),
        };
        assert_eq!(
            submitted.detail_json(),
            r#"{"account":"physics","partition":"low","qos":"normal","user":null}"#
        );
        // What the store holds (always with who) reads as before.
        assert_eq!(
            AuditWhat::from_parts("cancelled", r#"{"by":1000,"state":"RUNNING"}"#).unwrap(),
            AuditWhat::Cancelled {
                by: Some(1000),
                state: JobState::Running
            }
        );
    }

    #[test]
    fn the_query_string_escapes_node_names() {
        let q = AuditQuery {
            job: None,
            task: None,
            node: Some("node 03".into()),
            gpu: Some(5),
            since: Some(10),
            until: None,
        };
        assert_eq!(q.to_query_string(), "node=node%2003&gpu=5&since=10");
        let task = AuditQuery {
            job: Some(12),
            task: Some(4),
            ..Default::default()
        };
        assert_eq!(task.to_query_string(), "job=12&task=4");
    }
}
