//! `sluice sim --audit-out`'s lines are `sluice audit --json`'s: `sluice audit`'s text
//! renderer tells a replay's story from them.

use sluice_proto::audit::{AuditEvent, AuditReply};
use sluice_sim::audit::JsonLines;
use sluice_sim::replay::{run_audited, ReplayOptions};
use sluice_sim::testing::{backfill_every_second, job, low_and_high};

use crate::audit::story;
use sluice_proto::time::timestamp;

#[test]
fn sluice_audit_tells_a_replays_story_from_its_audit_lines() {
    // One node n0; low job 1 (GraceTime=10) runs from 0, high job 2 arrives at 30 and
    // preempts it (REQUEUE); job 2 runs 40-90, job 1 again 90-190.
    let c = low_and_high();
    let policy = backfill_every_second();
    let jobs = vec![job(1, 0, 1, 0, 100, 100), job(2, 1, 1, 30, 50, 50)];
    let mut sink = JsonLines::new(Vec::new());
    let opts = ReplayOptions::default();
    run_audited(c, policy, jobs, opts, &mut |_, _| {}, Some(&mut sink));
    let text = String::from_utf8(sink.finish().expect("in memory")).expect("UTF-8");
    let events: Vec<AuditEvent> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("sluice audit reads the line"))
        .collect();
    let reply = AuditReply {
        events,
        ..Default::default()
    };
    let t = timestamp;
    let rule = "under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1)";
    let expected = [
        format!(
            "{} job 1 submitted  by 1000 to partition low, account g7, QOS normal",
            t(0)
        ),
        format!(
            "{} job 1 started    run 0 by the main pass, priority 0 in partition low; on n0",
            t(0)
        ),
        format!(
            "{} job 2 submitted  by 1000 to partition high, account g7, QOS normal",
            t(30)
        ),
        format!("{} job 2 preempting job 1 {rule}", t(30)),
        format!(
            "{} job 1 preempted  for job 2 {rule}; REQUEUE after a grace of 10 s",
            t(30)
        ),
        format!(
            "{} job 1 requeued   preempted for job 2; run 0 kept as PREEMPTED; released n0",
            t(40)
        ),
        format!(
            "{} job 2 started    run 0 by the preempt pass, priority 0 in partition high; on n0",
            t(40)
        ),
        format!(
            "{} job 2 ended      COMPLETED, exit code 0:0; released n0",
            t(90)
        ),
        format!(
            "{} job 1 started    run 1 by the main pass, priority 0 in partition low; on n0",
            t(90)
        ),
        format!(
            "{} job 1 ended      COMPLETED, exit code 0:0; released n0",
            t(190)
        ),
    ];
    let names = |uid: u32| uid.to_string();
    assert_eq!(
        story(&reply, true, &names).lines().collect::<Vec<_>>(),
        expected
    );
}
