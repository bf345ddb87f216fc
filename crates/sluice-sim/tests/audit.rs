//! The replay's audit trail (`sluice sim --audit-out`): the same events, in the same
//! JSON lines, as the controller's `sluice audit --json`.

use sluice_core::Cluster;
use sluice_proto::audit::AuditEvent;
use sluice_sim::audit::JsonLines;
use sluice_sim::replay::{run, run_audited, ReplayOptions};
use sluice_sim::setup::SimJob;
use sluice_sim::testing::{backfill_every_second, job, low_and_high};

/// The replay's trail as JSON lines.
fn audit_lines(cluster: Cluster, jobs: Vec<SimJob>) -> Vec<String> {
    let mut sink = JsonLines::new(Vec::new());
    let policy = backfill_every_second();
    run_audited(
        cluster.clone(),
        policy.clone(),
        jobs.clone(),
        ReplayOptions::default(),
        &mut |_, _| {},
        Some(&mut sink),
    );
    let text = String::from_utf8(sink.finish().expect("in memory")).expect("UTF-8");
    // The trail changes nothing: the replay without it gives the same results.
    let plain = run(
        cluster.clone(),
        policy.clone(),
        jobs.clone(),
        ReplayOptions::default(),
        &mut |_, _| {},
    );
    let mut again = Vec::new();
    let audited = run_audited(
        cluster,
        policy,
        jobs,
        ReplayOptions::default(),
        &mut |_, _| {},
        Some(&mut again),
    );
    assert_eq!(plain.records, audited.records);
    // Every line reads back as the controller's event, and the sinks agree.
    let parsed: Vec<AuditEvent> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("an AuditEvent"))
        .collect();
    assert_eq!(parsed, again);
    text.lines().map(str::to_string).collect()
}

#[test]
fn main_and_backfill_starts_and_ends_are_recorded_as_the_controller_writes_them() {
    // Two 4-CPU nodes n0, n1 in partition batch. Job 1 (one node) starts at 0 by the
    // main pass on n0 and runs 100 s. Job 2 (two nodes) arrives at 5 and must wait for
    // n0 until 100. Job 3 (one node, limit 40) arrives at 10 and fits on n1 before 100:
    // the backfill pass starts it at 10; it would run 50 s, so it is killed at 50
    // (TIMEOUT). Job 2 starts at 100 by the main pass on both nodes and ends at 130.
    let cluster = Cluster::homogeneous("batch", 2, 4);
    let jobs = vec![
        job(1, 0, 1, 0, 100, 100),
        job(2, 0, 2, 5, 30, 60),
        job(3, 0, 1, 10, 50, 40),
    ];
    let lines = audit_lines(cluster, jobs);
    let submitted = |seq: u64, t: i64, id: u64| {
        format!(
            r#"{{"seq":{seq},"time":{t},"job_id":{id},"uid":1000,"kind":"submitted","detail":{{"user":"1000","partition":"batch","account":"g7","qos":"normal"}}}}"#
        )
    };
    let started = |seq: u64, t: i64, id: u64, pass: &str, nodes: &str| {
        format!(
            r#"{{"seq":{seq},"time":{t},"job_id":{id},"uid":1000,"kind":"started","detail":{{"run":0,"pass":"{pass}","priority":0,"rank":null,"partition":"batch","reservation":null,"user":"1000","nodes":[{nodes}]}}}}"#
        )
    };
    let ended = |seq: u64, t: i64, id: u64, state: &str, nodes: &str| {
        format!(
            r#"{{"seq":{seq},"time":{t},"job_id":{id},"uid":1000,"kind":"ended","detail":{{"run":0,"state":"{state}","exit_code":0,"signal":0,"released":[{nodes}]}}}}"#
        )
    };
    let n0 = r#"{"node":"n0","gpus":[],"files":[]}"#;
    let n1 = r#"{"node":"n1","gpus":[],"files":[]}"#;
    let both = format!("{n0},{n1}");
    assert_eq!(
        lines,
        vec![
            submitted(1, 0, 1),
            started(2, 0, 1, "main", n0),
            submitted(3, 5, 2),
            submitted(4, 10, 3),
            started(5, 10, 3, "backfill", n1),
            ended(6, 50, 3, "TIMEOUT", n1),
            ended(7, 100, 1, "COMPLETED", n0),
            started(8, 100, 2, "main", &both),
            ended(9, 130, 2, "COMPLETED", &both),
        ]
    );
}

#[test]
fn a_requeued_victims_preemption_and_requeue_are_recorded() {
    // One 4-CPU node n0; partitions low (tier 1, GraceTime=10) and high (tier 10),
    // PreemptType=preempt/partition_prio, PreemptMode=REQUEUE. Low job 1 runs from 0;
    // high job 2 arrives at 30: job 1 is signalled at 30 and requeued at 40, job 2
    // runs 40-90 (the preempt pass), job 1 runs again (run 1) 90-190.
    let c = low_and_high();
    let jobs = vec![job(1, 0, 1, 0, 100, 100), job(2, 1, 1, 30, 50, 50)];
    let lines = audit_lines(c, jobs);
    let n0 = r#"{"node":"n0","gpus":[],"files":[]}"#;
    let rule = r#"{"rule":"partition_prio","winner":"partition high (PriorityTier=10)","loser":"partition low (PriorityTier=1)"}"#;
    let expected = [
        r#"{"seq":1,"time":0,"job_id":1,"uid":1000,"kind":"submitted","detail":{"user":"1000","partition":"low","account":"g7","qos":"normal"}}"#.to_string(),
        format!(r#"{{"seq":2,"time":0,"job_id":1,"uid":1000,"kind":"started","detail":{{"run":0,"pass":"main","priority":0,"rank":null,"partition":"low","reservation":null,"user":"1000","nodes":[{n0}]}}}}"#),
        r#"{"seq":3,"time":30,"job_id":2,"uid":1000,"kind":"submitted","detail":{"user":"1000","partition":"high","account":"g7","qos":"normal"}}"#.to_string(),
        format!(r#"{{"seq":4,"time":30,"job_id":2,"uid":1000,"kind":"preempting","detail":{{"victims":[{{"job":1,"uid":1000}}],"rule":{rule}}}}}"#),
        format!(r#"{{"seq":5,"time":30,"job_id":1,"uid":1000,"kind":"preempted","detail":{{"by":{{"job":2,"uid":1000}},"rule":{rule},"mode":"REQUEUE","grace":10}}}}"#),
        format!(r#"{{"seq":6,"time":40,"job_id":1,"uid":1000,"kind":"requeued","detail":{{"run":0,"ended_as":"PREEMPTED","cause":{{"type":"preempted","by":{{"job":2,"uid":1000}}}},"released":[{n0}]}}}}"#),
        format!(r#"{{"seq":7,"time":40,"job_id":2,"uid":1000,"kind":"started","detail":{{"run":0,"pass":"preempt","priority":0,"rank":null,"partition":"high","reservation":null,"user":"1000","nodes":[{n0}]}}}}"#),
        format!(r#"{{"seq":8,"time":90,"job_id":2,"uid":1000,"kind":"ended","detail":{{"run":0,"state":"COMPLETED","exit_code":0,"signal":0,"released":[{n0}]}}}}"#),
        format!(r#"{{"seq":9,"time":90,"job_id":1,"uid":1000,"kind":"started","detail":{{"run":1,"pass":"main","priority":0,"rank":null,"partition":"low","reservation":null,"user":"1000","nodes":[{n0}]}}}}"#),
        format!(r#"{{"seq":10,"time":190,"job_id":1,"uid":1000,"kind":"ended","detail":{{"run":1,"state":"COMPLETED","exit_code":0,"signal":0,"released":[{n0}]}}}}"#),
    ];
    assert_eq!(lines, expected);
}

#[test]
fn started_and_ended_lines_name_the_gpus_the_core_chose() {
    // One 16-CPU node n0 with 4 GPUs NVLinked crosswise (0 with 2, 1 with 3), 1,000
    // shards each. At 0: job 1 takes 2 GPUs (a linked pair: 0 and 2) for 100 s, job 2
    // 500 shards (of GPU 1) for 50 s, job 3 one GPU (the one left whole: 3) for 80 s.
    let mut c = Cluster::homogeneous("batch", 1, 16);
    let gpu = c.gres.slot_for("gpu", None).unwrap();
    let shard = c.gres.slot_for("shard", None).unwrap();
    let n = &mut c.nodes[0];
    n.capacity.gres[gpu] = 4;
    n.capacity.gres[shard] = 4000;
    let pairs = [(0, 2), (2, 0), (1, 3), (3, 1)];
    n.gpus = (0..4)
        .map(|i| sluice_core::Gpu {
            links: Some(
                (0..4)
                    .map(|j| match (i == j, pairs.contains(&(i, j))) {
                        (true, _) => -1,
                        (false, true) => 4,
                        (false, false) => 0,
                    })
                    .collect(),
            ),
            shards: 1000,
            ..Default::default()
        })
        .collect();
    let asking = |id, run, slot: usize, k| {
        let mut j = job(id, 0, 1, 0, run, run);
        j.spec.request.gres_per_node[slot] = k;
        j
    };
    let jobs = vec![
        asking(1, 100, gpu, 2),
        asking(2, 50, shard, 500),
        asking(3, 80, gpu, 1),
    ];
    let lines = audit_lines(c, jobs);
    let on = |gpus: &str| format!(r#"{{"node":"n0","gpus":[{gpus}],"files":[]}}"#);
    let started = |seq: u64, id: u64, gpus: &str| {
        format!(
            r#"{{"seq":{seq},"time":0,"job_id":{id},"uid":1000,"kind":"started","detail":{{"run":0,"pass":"main","priority":0,"rank":null,"partition":"batch","reservation":null,"user":"1000","nodes":[{}]}}}}"#,
            on(gpus)
        )
    };
    let ended = |seq: u64, t: i64, id: u64, gpus: &str| {
        format!(
            r#"{{"seq":{seq},"time":{t},"job_id":{id},"uid":1000,"kind":"ended","detail":{{"run":0,"state":"COMPLETED","exit_code":0,"signal":0,"released":[{}]}}}}"#,
            on(gpus)
        )
    };
    let kinds: Vec<&String> = lines
        .iter()
        .filter(|l| !l.contains(r#""kind":"submitted""#))
        .collect();
    assert_eq!(
        kinds,
        [
            &started(2, 1, "0,2"),
            &started(4, 2, "1"),
            &started(6, 3, "3"),
            &ended(7, 50, 2, "1"),
            &ended(8, 80, 3, "3"),
            &ended(9, 100, 1, "0,2"),
        ]
    );
}
