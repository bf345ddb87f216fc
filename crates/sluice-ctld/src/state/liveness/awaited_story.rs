//! A restarted controller's nodes awaiting their agents: `UNKNOWN` and not responding,
//! no new work, waiting jobs' reasons as with the nodes up; an agent that has not
//! registered within `SlurmdTimeout` has its node set DOWN (`Not responding`) and its
//! jobs requeued, and jobs needing that node then say its nodes are down.

use std::path::Path;

use sluice_proto::types::JobState;

use crate::state::tests::{conf, desc, node_rows, root, submit};
use crate::state::{Controller, Effect};

/// Each node as `sinfo` and `scontrol show node` get it: name, state, responding,
/// reason.
fn nodes(c: &Controller) -> Vec<(String, String, bool, Option<String>)> {
    c.nodes()
        .into_iter()
        .map(|n| (n.name, n.state, n.agent_up, n.reason))
        .collect()
}

fn node(
    name: &str,
    state: &str,
    up: bool,
    reason: Option<&str>,
) -> (String, String, bool, Option<String>) {
    (name.into(), state.into(), up, reason.map(Into::into))
}

#[test]
fn a_restarted_controllers_nodes_await_their_agents_until_slurmd_timeout_then_go_down() {
    // Two nodes of 4 CPUs; SlurmdTimeout=30. Job 1 holds both nodes, job 2 waits for
    // room.
    let mut conf = conf(2, 4);
    conf.net.slurmd_timeout = 30;
    conf.net.return_to_service = 1;
    let mut c = Controller::new(conf.clone(), Path::new("/s"), vec![], vec![], 0);
    c.set_slurm_uid(64030);
    let mut next = 1;
    let (big, _) = submit(&mut c, desc(8, 600), &mut next, 0);
    c.schedule(0);
    let (room, _) = submit(&mut c, desc(4, 60), &mut next, 1);
    c.schedule(1);
    assert_eq!(c.job(room).unwrap().reason, "Resources");

    // The controller restarts at 100 while both agents are away.
    let (jobs, steps) = c.accounting();
    let mut c = Controller::new(conf, Path::new("/s"), jobs, steps, 100);
    c.set_slurm_uid(64030);
    c.await_agents(100);
    c.schedule(101);
    // UNKNOWN and not responding, no reason yet (Slurm's `unk*`); job 1 runs on, job 2
    // still waits for room, not for nodes that are down.
    assert_eq!(
        nodes(&c),
        [
            node("node01", "unknown", false, None),
            node("node02", "unknown", false, None)
        ]
    );
    assert_eq!(c.job(big).unwrap().state, JobState::Running);
    assert_eq!(c.job(room).unwrap().reason, "Resources");

    // node01's agent registers with job 1's run; node02's never does. Job 1 ends: job 2
    // does not start on node02, which takes no work, but fits on node01.
    c.agent_registered("node01", &[(big, 0)], 102);
    assert_eq!(nodes(&c)[0], node("node01", "allocated", true, None));
    assert_eq!(nodes(&c)[1], node("node02", "unknown", false, None));
    assert!(c.silent_expired(129).is_empty());
    assert_eq!(c.job(room).unwrap().reason, "Resources");

    // SlurmdTimeout after the restart, node02 is DOWN for not responding, set by the
    // controller's user and kept; job 1, which ran there, is requeued.
    let effects = c.silent_expired(130);
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::PersistNode { name, record: Some(r) }
                if name == "node02" && r.contains("Not responding")
        )),
        "{effects:?}"
    );
    assert_eq!(
        nodes(&c)[1],
        node("node02", "down", false, Some("Not responding"))
    );
    assert_eq!(c.nodes()[1].reason_set, Some((64030, 130)));
    let r = c.job(big).unwrap();
    assert_eq!((r.state, r.restarts), (JobState::Pending, 1), "{r:?}");
    // node01's agent, asked again, lists no run: job 1's first run is over there. Job
    // 2 runs on node01; job 1, needing both nodes, now waits for nodes that are down.
    c.agent_registered("node01", &[], 131);
    let r = c.job(room).unwrap();
    assert_eq!(
        (r.state, r.nodes),
        (JobState::Running, vec!["node01".to_string()])
    );
    assert_eq!(
        c.job(big).unwrap().reason,
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority \
         partitions"
    );
}

#[test]
fn a_node_with_recovered_jobs_is_given_the_agents_retry_interval_before_it_goes_down() {
    // Two nodes of 4 CPUs; SlurmdTimeout=5, shorter than the 16 s an agent that lost
    // its controller may wait before it tries again. Job 1 runs on node01.
    let mut conf = conf(2, 4);
    conf.net.slurmd_timeout = 5;
    let mut c = Controller::new(conf.clone(), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (job, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    c.schedule(0);
    assert_eq!(c.job(job).unwrap().nodes, ["node01"]);

    // The controller restarts at 100 with both agents away. node02, where nothing
    // runs, is DOWN at 105; node01, where job 1 runs, only at 120: its agent may still
    // be waiting out its retry interval, and its job would be lost for nothing.
    let (jobs, steps) = c.accounting();
    let mut c = Controller::new(conf, Path::new("/s"), jobs, steps, 100);
    c.await_agents(100);
    c.schedule(101);
    c.silent_expired(105);
    assert_eq!(
        nodes(&c)[1],
        node("node02", "down", false, Some("Not responding"))
    );
    c.silent_expired(119);
    assert_eq!(nodes(&c)[0], node("node01", "unknown", false, None));
    assert_eq!(c.job(job).unwrap().state, JobState::Running);
    c.silent_expired(120);
    assert_eq!(
        nodes(&c)[0],
        node("node01", "down", false, Some("Not responding"))
    );
    assert_eq!(c.job(job).unwrap().state, JobState::Pending);
}

#[test]
fn an_operator_setting_an_awaited_node_down_ends_its_jobs_at_once() {
    // One node of 4 CPUs, job 1 on it; the controller restarts at 100 with the agent
    // away (SlurmdTimeout=300). At 110 an operator sets the node DOWN: job 1 is
    // requeued then, as on any node set DOWN, not when SlurmdTimeout runs out.
    let mut conf = conf(1, 4);
    conf.net.slurmd_timeout = 300;
    let mut c = Controller::new(conf.clone(), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (job, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    c.schedule(0);
    let (jobs, steps) = c.accounting();
    let mut c = Controller::new(conf, Path::new("/s"), jobs, steps, 100);
    c.await_agents(100);
    c.schedule(101);
    assert_eq!(c.job(job).unwrap().state, JobState::Running);
    c.update_node("node01", "DOWN", Some("cabling"), &root(), 110)
        .expect("an operator may");
    let r = c.job(job).unwrap();
    assert_eq!((r.state, r.restarts), (JobState::Pending, 1), "{r:?}");
    assert_eq!(nodes(&c)[0], node("node01", "down", false, Some("cabling")));
}

/// `explain`'s node lines for job `id` at `now`: nodes and their situation.
fn node_lines(c: &Controller, id: sluice_core::JobId, now: i64) -> Vec<(String, String)> {
    let e = c.explain(id, None, &root(), now).expect("explained");
    e.resources
        .expect("resources")
        .nodes
        .into_iter()
        .map(|l| (l.nodes, l.text))
        .collect()
}

#[test]
fn explain_says_an_awaited_node_waits_for_its_agent_until_slurmd_timeout() {
    // Two nodes of 4 CPUs; SlurmdTimeout=30. A job needs both nodes' CPUs.
    let mut conf = conf(2, 4);
    conf.net.slurmd_timeout = 30;
    let mut c = Controller::new(conf.clone(), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(8, 600), &mut next, 0);

    // The controller restarts at 100 before it ran, both agents away: explain says the
    // nodes wait for their agents, and when they go DOWN should they not come, rather
    // than calling them DOWN already.
    let (jobs, steps) = c.accounting();
    let mut c = Controller::new(conf, Path::new("/s"), jobs, steps, 100);
    c.await_agents(100);
    c.schedule(101);
    let waiting = format!(
        "UNKNOWN, waiting for its agent to register (DOWN at {} if it has not)",
        sluice_proto::time::timestamp(130)
    );
    assert_eq!(
        node_lines(&c, id, 101),
        [("node[01-02]".into(), waiting.clone())]
    );

    // node01's agent registers: node02 alone still waits.
    c.agent_registered("node01", &[], 102);
    let lines = node_lines(&c, id, 102);
    assert_eq!(lines[1], ("node02".into(), waiting));

    // SlurmdTimeout passes: node02 is DOWN, for not responding.
    c.silent_expired(130);
    let lines = node_lines(&c, id, 131);
    assert_eq!(
        lines[1],
        ("node02".into(), "DOWN, reason 'Not responding'".into())
    );
}

#[test]
fn a_drained_node_whose_agent_never_registers_after_a_restart_goes_down_beneath_its_drain() {
    // Two nodes of 4 CPUs; SlurmdTimeout=30, ReturnToService=1. Job 1 holds both
    // nodes; an operator drains node02 ("disks") while it runs.
    let mut conf = conf(2, 4);
    conf.net.slurmd_timeout = 30;
    conf.net.return_to_service = 1;
    let mut c = Controller::new(conf.clone(), Path::new("/s"), vec![], vec![], 0);
    c.set_slurm_uid(64030);
    c.agent_registered("node01", &[], 0);
    c.agent_registered("node02", &[], 0);
    let mut next = 1;
    let (big, _) = submit(&mut c, desc(8, 600), &mut next, 0);
    c.schedule(0);
    let drained = c
        .update_node("node02", "DRAIN", Some("disks"), &root(), 10)
        .unwrap();
    let rows = node_rows(&drained);

    // The controller restarts at 100; node02's agent never registers again. node02 is
    // draining and not responding, the operator's reason kept.
    let (jobs, steps) = c.accounting();
    let mut c = Controller::new(conf, Path::new("/s"), jobs, steps, 100);
    c.set_slurm_uid(64030);
    c.restore_nodes(&rows);
    c.await_agents(100);
    c.agent_registered("node01", &[(big, 0)], 101);
    assert_eq!(
        nodes(&c)[1],
        node("node02", "draining", false, Some("disks"))
    );
    assert!(c.silent_expired(129).is_empty());

    // SlurmdTimeout after the restart it goes DOWN beneath its drain (Slurm's
    // DOWN+DRAIN+NOT_RESPONDING, `drain*` to sinfo), the operator's reason and its
    // author kept, and kept in the store; job 1, which ran there, is requeued.
    let effects = c.silent_expired(130);
    assert_eq!(
        nodes(&c)[1],
        node("node02", "drained", false, Some("disks"))
    );
    let n2 = &c.nodes()[1];
    assert!(n2.down);
    assert_eq!(n2.reason_set, Some((0, 10)));
    let kept = node_rows(&effects);
    assert_eq!(kept.len(), 1, "{effects:?}");
    assert!(kept[0].1.contains("\"DOWN+DRAIN\""), "{kept:?}");
    let r = c.job(big).unwrap();
    assert_eq!((r.state, r.restarts), (JobState::Pending, 1), "{r:?}");

    // Its agent at last registers: with ReturnToService=1 the operator's DOWN stays.
    c.agent_registered("node02", &[], 140);
    let n2 = &c.nodes()[1];
    assert_eq!(
        (n2.state.as_str(), n2.down, n2.agent_up),
        ("drained", true, true)
    );
}

#[test]
fn a_node_drained_by_its_slurm_conf_line_whose_agent_never_registers_goes_down_beneath_its_drain() {
    // node02's line drains it (State=DRAIN, no reason); SlurmdTimeout=30,
    // ReturnToService=1. Its agent is away when the controller starts.
    let mut conf = conf(2, 4);
    conf.net.slurmd_timeout = 30;
    conf.net.return_to_service = 1;
    conf.cluster.nodes[1].state = sluice_core::NodeState::Drain;
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    c.set_slurm_uid(64030);
    c.await_agents(0);
    c.agent_registered("node01", &[], 1);
    assert!(c.silent_expired(29).is_empty());

    // SlurmdTimeout after the start: DOWN beneath its drain, with Slurm's reason set by
    // the controller's user (`set_node_down_ptr`), kept in the store.
    let effects = c.silent_expired(30);
    assert_eq!(
        nodes(&c)[1],
        node("node02", "drained", false, Some("Not responding"))
    );
    let n2 = &c.nodes()[1];
    assert!(n2.down);
    assert_eq!(n2.reason_set, Some((64030, 30)));
    let kept = node_rows(&effects);
    assert_eq!(kept.len(), 1, "{effects:?}");
    assert!(kept[0].1.contains("\"DOWN+DRAIN\""), "{kept:?}");

    // Its agent registers at last: ReturnToService=1 brings back a node DOWN for not
    // responding, drained again (IDLE+DRAIN), as Slurm does.
    c.agent_registered("node02", &[], 40);
    let n2 = &c.nodes()[1];
    assert_eq!(
        (n2.state.as_str(), n2.down, n2.agent_up),
        ("drained", false, true)
    );
}
