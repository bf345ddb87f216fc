//! `sluice audit`: the audit trail — a job's story over time (`sluice audit JOBID`), who
//! held a node or one of its GPUs when and why (`sluice audit --node node03 --gpu 5
//! --since 2026-11-01`), or every event in a window; as text, or as JSON lines
//! (`--json`) for export.
//!
//! What a user who is not an operator sees follows slurm.conf's `PrivateData`, as the
//! controller serves it: under `jobs`, their own jobs' events and of other users' only
//! how many there are; under `users`, other users' events without who they are (`by
//! another user`, `a job of another user` where `jobs` hides the job too).

use clap::Args;
use sluice_proto::audit::{
    AuditEvent, AuditHold, AuditQuery, AuditReply, AuditWhat, JobRef, NodeDevices, RequeueCause,
};
use sluice_proto::time::{parse_timestamp, timestamp};
use sluice_proto::types::compact_indices;

use crate::slurm::common::{controller, describe, now};

const ME: &str = "sluice audit";

/// Options of `sluice audit`.
#[derive(Args, Debug)]
pub struct AuditArgs {
    /// The job whose story to tell.
    #[arg(value_name = "JOBID")]
    pub job: Option<String>,
    /// Who held this node (and which GPUs) when, and why.
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    /// With --node: only this GPU index.
    #[arg(long, value_name = "INDEX", requires = "node")]
    pub gpu: Option<u32>,
    /// From this time on (`2026-11-01`, `2026-11-01T08:00`, `now-7days`, `today`:
    /// sacct's -S forms).
    #[arg(long, short = 'S', value_name = "TIME")]
    pub since: Option<String>,
    /// Up to this time (same forms).
    #[arg(long, short = 'E', value_name = "TIME")]
    pub until: Option<String>,
    /// JSON lines: one event (or, with --node, one hold) per line.
    #[arg(long)]
    pub json: bool,
}

fn fail(message: impl std::fmt::Display) -> ! {
    crate::slurm::common::fail(ME, message, 1)
}

/// A user's name, or the uid when it has none here.
pub(crate) fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string())
}

/// Nodes with their GPUs and files: `g1 (GPU 0-1: /dev/nvidia0,/dev/nvidia1), g2`.
fn devices(nodes: &[NodeDevices]) -> String {
    nodes
        .iter()
        .map(|n| match (n.gpus.is_empty(), n.files.is_empty()) {
            (true, _) => n.node.clone(),
            (false, true) => format!("{} (GPU {})", n.node, compact_indices(&n.gpus)),
            (false, false) => format!(
                "{} (GPU {}: {})",
                n.node,
                compact_indices(&n.gpus),
                n.files.join(",")
            ),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who acted, by name; `another user` when the controller hides who
/// (`PrivateData=users`).
fn who(by: Option<u32>, name: &dyn Fn(u32) -> String) -> String {
    by.map_or_else(|| ANOTHER.to_string(), name)
}

/// Someone the reader may not know (`PrivateData=users`).
const ANOTHER: &str = "another user";

fn job_ref(r: &JobRef) -> String {
    match r.job {
        Some(j) => format!("job {j}"),
        None => "a job of another user".into(),
    }
}

fn rule(r: &sluice_proto::audit::PreemptRule) -> String {
    let name = match r.rule.as_str() {
        "partition_prio" => "PreemptType=preempt/partition_prio",
        "qos" => "PreemptType=preempt/qos",
        "cohort_reclaim" => "cohort reclaim",
        other => other,
    };
    format!("under {name}: {} over {}", r.winner, r.loser)
}

fn released(nodes: &[NodeDevices]) -> String {
    if nodes.is_empty() {
        String::new()
    } else {
        format!("; released {}", devices(nodes))
    }
}

/// What happened and why, in words (the text after the event's name).
pub fn describe_event(what: &AuditWhat, name: &dyn Fn(u32) -> String) -> String {
    match what {
        AuditWhat::Submitted {
            user,
            partition,
            account,
            qos,
        } => format!(
            "by {} to partition {partition}, account {account}, QOS {qos}",
            user.as_deref().unwrap_or(ANOTHER)
        ),
        AuditWhat::Held { by, admin } => {
            let kind = if *admin { " (operator hold)" } else { "" };
            format!("by {}{kind}", who(*by, name))
        }
        AuditWhat::Released { by } | AuditWhat::Suspended { by } | AuditWhat::Resumed { by } => {
            format!("by {}", who(*by, name))
        }
        AuditWhat::IdleGpus { gpus } => format!(
            "{} of {} GPUs under {}% utilisation since {}",
            gpus.idle,
            gpus.held,
            gpus.threshold,
            sluice_proto::time::timestamp(gpus.since)
        ),
        AuditWhat::Updated { by, changes } => {
            format!("by {}: {}", who(*by, name), changes.join(" "))
        }
        AuditWhat::ServiceRestarted {
            run,
            restart,
            cause,
            exit_code,
            signal,
        } => {
            let why = match cause {
                sluice_proto::service::RestartCause::Exited => {
                    format!("its process exited {exit_code}:{signal}")
                }
                sluice_proto::service::RestartCause::Unhealthy => {
                    "its health check failed".to_string()
                }
            };
            format!("restart {restart} in place (run {run}): {why}")
        }
        AuditWhat::Cancelled { by, state } => {
            format!("by {} while {}", who(*by, name), state.name())
        }
        AuditWhat::Requeued {
            run,
            ended_as,
            cause,
            released: nodes,
        } => {
            let cause = match cause {
                RequeueCause::Request { by } => format!("by {}", who(*by, name)),
                RequeueCause::Preempted { by } => format!("preempted for {}", job_ref(by)),
                RequeueCause::NodeFail => "its node failed".into(),
                RequeueCause::Shutdown => "the cluster was stopped".into(),
            };
            format!(
                "{cause}; run {run} kept as {}{}",
                ended_as.name(),
                released(nodes)
            )
        }
        AuditWhat::Started {
            run,
            pass,
            priority,
            rank,
            partition,
            reservation,
            nodes,
            ..
        } => {
            let rank = rank.map(|r| format!(", rank {r}")).unwrap_or_default();
            let resv = reservation
                .as_ref()
                .map(|r| format!(", reservation {r}"))
                .unwrap_or_default();
            format!(
                "run {run} by the {pass} pass, priority {priority}{rank} in partition {partition}{resv}; on {}",
                devices(nodes)
            )
        }
        // The backfill pass's plan, not the forecast `explain` gives.
        AuditWhat::Planned { from, to } => match from {
            Some(f) => format!(
                "start {} in the backfill plan (was {})",
                timestamp(*to),
                timestamp(*f)
            ),
            None => format!("start {} in the backfill plan", timestamp(*to)),
        },
        AuditWhat::Reason { from, to, limit } => {
            let limit = if *limit { ", a limit reached" } else { "" };
            match from {
                Some(f) => format!("reason {to}{limit} (was {f})"),
                None => format!("reason {to}{limit}"),
            }
        }
        AuditWhat::Preempted {
            by,
            rule: r,
            mode,
            grace,
        } => format!(
            "for {} {}; {mode} after a grace of {grace} s",
            job_ref(by),
            rule(r)
        ),
        AuditWhat::Preempting { victims, rule: r } => {
            let shown: Vec<String> = victims
                .iter()
                .filter_map(|v| v.job)
                .map(|j| j.to_string())
                .collect();
            let hidden = victims.len() - shown.len();
            let mut who = match shown.len() {
                0 => String::new(),
                1 => format!("job {}", shown[0]),
                _ => format!("jobs {}", shown.join(",")),
            };
            if hidden > 0 {
                if !who.is_empty() {
                    who.push_str(" and ");
                }
                who.push_str(&format!("{hidden} job(s) of other users"));
            }
            format!("{who} {}", rule(r))
        }
        AuditWhat::Ended {
            state,
            exit_code,
            signal,
            released: nodes,
            ..
        } => format!(
            "{}, exit code {exit_code}:{signal}{}",
            state.name(),
            released(nodes)
        ),
    }
}

/// The word an event is listed under.
fn label(what: &AuditWhat) -> &'static str {
    match what {
        AuditWhat::Reason { .. } => "pending",
        other => other.kind(),
    }
}

/// A job's story (or a window's events): one line per event — time, what, why — and a
/// last line counting what was left out.
pub fn story(reply: &AuditReply, with_job: bool, name: &dyn Fn(u32) -> String) -> String {
    let mut out = String::new();
    for e in &reply.events {
        let job = if with_job {
            format!("job {} ", e.job_id)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{} {job}{:<10} {}\n",
            timestamp(e.time),
            label(&e.what),
            describe_event(&e.what, name)
        ));
    }
    if reply.hidden_events > 0 {
        out.push_str(&format!(
            "({} events of other users' jobs not shown)\n",
            reply.hidden_events
        ));
    }
    out
}

/// Why a hold began: the start's pass, priority and rank.
fn cause(e: Option<&AuditEvent>) -> String {
    match e.map(|e| &e.what) {
        Some(AuditWhat::Started {
            pass,
            priority,
            rank,
            partition,
            reservation,
            ..
        }) => {
            let rank = rank.map(|r| format!(", rank {r}")).unwrap_or_default();
            let resv = reservation
                .as_ref()
                .map(|r| format!(", reservation {r}"))
                .unwrap_or_default();
            format!("{pass} pass, priority {priority}{rank} in {partition}{resv}")
        }
        _ => "unknown (purged)".into(),
    }
}

/// Who held the node's devices when: one line per job run, by start.
pub fn holds_table(reply: &AuditReply, name: &dyn Fn(u32) -> String) -> String {
    let rows: Vec<[String; 7]> = reply
        .holds
        .iter()
        .map(|h: &AuditHold| {
            // Its user, unless hidden (`-`).
            let user = match (&h.cause, h.uid) {
                (
                    Some(AuditEvent {
                        what:
                            AuditWhat::Started {
                                user: Some(user), ..
                            },
                        ..
                    }),
                    _,
                ) => user.clone(),
                (_, Some(uid)) => name(uid),
                _ => "-".into(),
            };
            let job = match (h.job_id, h.run) {
                (Some(j), 0) => j.to_string(),
                (Some(j), run) => format!("{j} (run {run})"),
                (None, _) => "-".into(),
            };
            [
                job,
                user,
                h.node.clone(),
                if h.gpus.is_empty() {
                    "-".into()
                } else {
                    compact_indices(&h.gpus)
                },
                timestamp(h.start),
                h.end.map_or_else(|| "Unknown".into(), timestamp),
                cause(h.cause.as_ref()),
            ]
        })
        .collect();
    let head = ["JOBID", "USER", "NODE", "GPUS", "START", "END", "CAUSE"];
    let mut width = head.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 6 {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$} ", w = width[i]));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(head);
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]]));
    }
    if reply.hidden_holds > 0 {
        out.push_str(&format!(
            "({} holds of other users' jobs not shown)\n",
            reply.hidden_holds
        ));
    }
    out
}

/// Runs `sluice audit`.
pub fn run(args: AuditArgs) -> i32 {
    let t = now();
    let time = |v: &Option<String>| {
        v.as_deref().map(|s| {
            parse_timestamp(s, t)
                .unwrap_or_else(|| fail(format!("Invalid time specification: {s}")))
        })
    };
    // A job or one array task (`123_4`); not a step, not a range of tasks.
    let (job, task) = match args.job.as_deref() {
        None => (None, None),
        Some(j) => match crate::slurm::common::parse_job_arg(j) {
            Some(ids) if ids.len() == 1 && !j.contains('.') => (Some(ids[0].0), ids[0].1),
            _ => fail(format!("Invalid job id specified: {j}")),
        },
    };
    let (since, until) = (time(&args.since), time(&args.until));
    if let (Some(s), Some(u)) = (since, until) {
        if s >= u {
            fail("--since must be earlier than --until");
        }
    }
    let query = AuditQuery {
        job,
        task,
        node: args.node.clone(),
        gpu: args.gpu,
        since,
        until,
    };
    let reply: AuditReply = controller()
        .get(&format!("/v1/audit?{}", query.to_query_string()))
        .unwrap_or_else(|e| match (describe(&e), &args.job) {
            (why, Some(j)) if why == "Invalid job id specified" => fail(format!("{why}: {j}")),
            (why, _) => fail(why),
        });
    if let (Some(j), true) = (
        &args.job,
        reply.events.is_empty() && reply.hidden_events == 0,
    ) {
        let window = if since.is_some() || until.is_some() {
            " in that time"
        } else {
            ""
        };
        fail(format!("No audit events for job {j}{window}"));
    }
    if args.json {
        let lines: Vec<String> = if query.node.is_some() {
            reply
                .holds
                .iter()
                .map(|h| serde_json::to_string(h).expect("holds serialise"))
                .collect()
        } else {
            reply
                .events
                .iter()
                .map(|e| serde_json::to_string(e).expect("events serialise"))
                .collect()
        };
        for l in lines {
            println!("{l}");
        }
        return 0;
    }
    if query.node.is_some() {
        print!("{}", holds_table(&reply, &user_name));
        return 0;
    }
    print!("{}", story(&reply, job.is_none(), &user_name));
    0
}

#[cfg(test)]
mod tests;
