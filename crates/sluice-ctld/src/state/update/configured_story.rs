//! Nodes slurm.conf configures `State=DRAIN` or `State=DOWN` with a `Reason=`: drained
//! or down from the start with that reason (set by no one at no known time, as real
//! Slurm 22.05 shows it), resumed by an operator as any other node, brought back by
//! `ReturnToService` as Slurm's are, and configured so again at every start.

use std::path::Path;

use sluice_core::NodeState;

use crate::config::ClusterConfig;
use crate::state::tests::{conf, desc, node_rows, root, submit};
use crate::state::Controller;

/// A node as `sinfo` and `scontrol show node` get it: state, reason, who set it and
/// when.
type Shown = (String, Option<String>, Option<(u32, i64)>);

fn nodes(c: &Controller) -> Vec<Shown> {
    c.nodes()
        .into_iter()
        .map(|n| (n.state, n.reason, n.reason_set))
        .collect()
}

fn node(state: &str, reason: Option<&str>, set: Option<(u32, i64)>) -> Shown {
    (state.into(), reason.map(Into::into), set)
}

/// Three nodes of 4 CPUs: node01's line says `State=DRAIN Reason="maintenance
/// window"`, node02's `State=DOWN Reason=cabling`, node03's nothing.
fn configured(return_to_service: u8) -> ClusterConfig {
    let mut conf = conf(3, 4);
    conf.net.return_to_service = return_to_service;
    conf.cluster.nodes[0].state = NodeState::Drain;
    conf.cluster.nodes[1].state = NodeState::Down;
    conf.node_reasons
        .insert("node01".into(), "maintenance window".into());
    conf.node_reasons.insert("node02".into(), "cabling".into());
    conf
}

fn start(conf: ClusterConfig, rows: &[(String, String)], now: i64) -> Controller {
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], now);
    c.restore_nodes(rows);
    c.await_agents(now);
    for n in ["node01", "node02", "node03"] {
        c.agent_registered(n, &[], now + 1);
    }
    c
}

#[test]
fn a_node_drained_by_its_slurm_conf_line_shows_the_lines_reason_and_an_operator_resumes_it() {
    // ReturnToService=2: node02, DOWN by its line, is back in service once its agent
    // registers, its reason gone (real Slurm does the same).
    let mut c = start(configured(2), &[], 0);
    assert_eq!(
        nodes(&c),
        [
            node("drained", Some("maintenance window"), Some((0, 0))),
            node("idle", None, None),
            node("idle", None, None),
        ]
    );

    // A job for all twelve CPUs waits: node01 takes no work.
    let mut next = 1;
    let (all, _) = submit(&mut c, desc(12, 600), &mut next, 2);
    c.schedule(2);
    assert_ne!(
        c.job(all).unwrap().state,
        sluice_proto::types::JobState::Running
    );

    // The operator resumes node01: no reason, and once its agent answers (as for any
    // node resumed) the job starts there.
    c.update_node("node01", "RESUME", None, &root(), 10)
        .unwrap();
    assert_eq!(nodes(&c)[0], node("idle", None, None));
    c.agents_answered(&["node01".to_string()], 12);
    c.schedule(12);
    assert_eq!(
        nodes(&c)[0],
        node("allocated", None, None),
        "{:?}",
        c.job(all).unwrap().reason
    );
    assert_eq!(
        c.job(all).unwrap().state,
        sluice_proto::types::JobState::Running
    );
}

#[test]
fn with_return_to_service_1_a_node_down_by_its_line_stays_down_with_its_reason() {
    let c = start(configured(1), &[], 0);
    let n2 = &c.nodes()[1];
    assert_eq!(
        (n2.state.as_str(), n2.reason.as_deref(), n2.reason_set),
        ("down", Some("cabling"), Some((0, 0)))
    );
}

#[test]
fn the_lines_state_comes_back_at_every_start_and_a_saved_reason_fills_in_where_it_gives_none() {
    // node03's line now says State=DRAIN without a reason. Before the restart an
    // operator resumed node01 and set node03 DOWN for a fan (uid 1000, at 50).
    let mut conf = configured(1);
    conf.cluster.nodes[2].state = NodeState::Drain;
    let mut c = start(conf.clone(), &[], 0);
    c.update_node("node01", "RESUME", None, &root(), 40)
        .unwrap();
    let mut admin = root();
    admin.uid = 1000;
    let rows = node_rows(
        &c.update_node("node03", "DOWN", Some("fan"), &admin, 50)
            .unwrap(),
    );
    assert_eq!(rows.len(), 1);

    // Restarted from the same slurm.conf: node01 is drained again by its line, as
    // Slurm's; node03's line (Slurm's UNKNOWN+DRAIN) takes the saved DOWN beneath its
    // drain, with the saved reason, who set it and when, its line giving none. Both
    // are written back to the store.
    let c = start(conf, &rows, 100);
    let got = nodes(&c);
    assert_eq!(
        got[0],
        node("drained", Some("maintenance window"), Some((0, 0)))
    );
    assert_eq!(got[2], node("drained", Some("fan"), Some((1000, 50))));
    assert!(c.nodes()[2].down);
    let written: Vec<String> = c
        .configured_rows()
        .into_iter()
        .map(|(name, record)| format!("{name} {record}"))
        .collect();
    assert_eq!(
        written,
        [
            r#"node01 {"state":"DRAIN","reason":"maintenance window","uid":0,"time":0}"#,
            r#"node02 {"state":"DOWN","reason":"cabling","uid":0,"time":0}"#,
            r#"node03 {"state":"DOWN+DRAIN","reason":"fan","uid":1000,"time":50}"#,
        ]
    );
}

#[test]
fn a_down_line_wins_over_what_was_saved_and_its_reason_over_the_saved_one() {
    // node02's line says DOWN (cabling); before the restart it was drained for disks.
    let mut c = start(configured(1), &[], 0);
    c.update_node("node02", "RESUME", None, &root(), 10)
        .unwrap();
    let rows = node_rows(
        &c.update_node("node02", "DRAIN", Some("disks"), &root(), 20)
            .unwrap(),
    );
    let c = start(configured(1), &rows, 100);
    let n2 = &c.nodes()[1];
    assert_eq!(
        (n2.state.as_str(), n2.reason.as_deref(), n2.reason_set),
        ("down", Some("cabling"), Some((0, 0)))
    );
}
