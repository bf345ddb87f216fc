//! Nodes that join, change or leave the cluster between passes (`scontrol
//! reconfigure`, `scontrol create node`, `scontrol delete node`).

mod common;

use common::*;
use sluice_core::{JobId, Node, NodeId, NodeState, PartitionId, PendingReason, Policy, Scheduler};

fn nodes_of(s: &Scheduler, id: u64) -> Option<Vec<u32>> {
    s.job(JobId(id))
        .unwrap()
        .alloc
        .as_ref()
        .map(|a| a.nodes.iter().map(|n| n.node.0).collect())
}

fn running(s: &Scheduler, id: u64) -> bool {
    s.job(JobId(id)).is_some() && s.pending().all(|j| j.spec.id != JobId(id))
}

#[test]
fn a_node_added_between_passes_takes_the_job_that_waited_for_room() {
    // One node of 4 CPUs. t=0 job 1 takes it whole for an hour; job 2 (4 CPUs) waits.
    // t=10 an operator adds n1 (4 CPUs) to the partition: job 2 starts there at once.
    for policy in [Policy::Fcfs, backfill(3600), Policy::Conservative] {
        let mut s = Scheduler::new(cluster(1, 4), policy.clone());
        s.submit(job(1).procs(4).time(3600).spec(), 0).unwrap();
        s.submit(job(2).procs(4).time(60).spec(), 0).unwrap();
        s.schedule(0);
        assert_eq!(nodes_of(&s, 1), Some(vec![0]), "{policy:?}");
        assert!(!running(&s, 2), "{policy:?}");

        let id = s.add_node(Node::new("n1", 4, 1000), &[PartitionId(0)], 10);
        assert_eq!(id, NodeId(1));
        assert_eq!(s.cluster().partitions[0].nodes, [NodeId(0), NodeId(1)]);
        s.schedule(10);
        assert_eq!(nodes_of(&s, 2), Some(vec![1]), "{policy:?}");
        assert!(running(&s, 2), "{policy:?}");
    }
}

#[test]
fn a_job_too_big_for_every_node_is_taken_once_a_big_enough_node_joins() {
    // The partition has 4-CPU nodes: an 8-CPU one-node job is refused. Once an 8-CPU
    // node joins it is accepted and starts there.
    let mut s = Scheduler::new(cluster(2, 4), Policy::Fcfs);
    let wide = || job(1).procs(8).one_node().time(60).spec();
    assert!(s.submit(wide(), 0).is_err());
    s.add_node(Node::new("big", 8, 1000), &[PartitionId(0)], 1);
    s.submit(wide(), 1).unwrap();
    s.schedule(1);
    assert_eq!(nodes_of(&s, 1), Some(vec![2]));
}

#[test]
fn a_busy_node_may_neither_change_nor_leave_and_an_idle_one_may() {
    // Two nodes of 4 CPUs. Job 1 runs on n0: n0 may not leave or change (job 1 is
    // named), and nothing changed. n1 grows to 8 CPUs: an 8-CPU job starts there.
    // Once job 1 ends, n0 leaves: no later job lands on it, and its id stays taken.
    let mut s = Scheduler::new(cluster(2, 4), Policy::Fcfs);
    s.submit(job(1).procs(4).one_node().time(600).spec(), 0)
        .unwrap();
    s.schedule(0);
    assert_eq!(nodes_of(&s, 1), Some(vec![0]));
    assert_eq!(s.remove_node(NodeId(0), 1), Err(vec![JobId(1)]));
    assert_eq!(
        s.replace_node(NodeId(0), Node::new("n0", 2, 1000), 1),
        Err(vec![JobId(1)])
    );
    assert_eq!(s.cluster().partitions[0].nodes, [NodeId(0), NodeId(1)]);
    assert_eq!(s.cluster().nodes[0].capacity.cpus, 4);

    s.replace_node(NodeId(1), Node::new("n1", 8, 1000), 2)
        .unwrap();
    s.submit(job(2).procs(8).one_node().time(600).spec(), 2)
        .unwrap();
    s.schedule(2);
    assert_eq!(nodes_of(&s, 2), Some(vec![1]));

    s.job_ended(JobId(1), 3);
    s.remove_node(NodeId(0), 3).unwrap();
    assert_eq!(s.cluster().partitions[0].nodes, [NodeId(1)]);
    assert_eq!(s.cluster().nodes[0].state, NodeState::Down);
    s.submit(job(3).procs(1).time(60).spec(), 4).unwrap();
    s.schedule(4);
    assert!(!running(&s, 3));
    assert_eq!(s.job(JobId(3)).unwrap().reason, PendingReason::Resources);
    // A node added later takes a new id, never the removed one's.
    assert_eq!(
        s.add_node(Node::new("n0", 4, 1000), &[PartitionId(0)], 5),
        NodeId(2)
    );
    s.schedule(5);
    assert_eq!(nodes_of(&s, 3), Some(vec![2]));
}

#[test]
fn a_reservation_on_a_leaving_node_is_planned_again_elsewhere() {
    // Conservative backfilling, two nodes of 4 CPUs. Job 1 takes n0 for 100 s, job 2
    // n1 for 1000 s; job 3 (4 CPUs) is reserved on n0 at t=100. n0 may not leave while
    // job 1 runs. Job 1 ends at t=10 and n0 leaves: job 3 is planned again on n1 at
    // t=1000 and starts then, never on the removed node.
    let mut s = Scheduler::new(cluster(2, 4), Policy::Conservative);
    s.submit(job(1).procs(4).one_node().time(100).spec(), 0)
        .unwrap();
    s.submit(job(2).procs(4).one_node().time(1000).spec(), 0)
        .unwrap();
    s.schedule(0);
    assert_eq!(nodes_of(&s, 1), Some(vec![0]));
    assert_eq!(nodes_of(&s, 2), Some(vec![1]));
    s.submit(job(3).procs(4).one_node().time(100).spec(), 1)
        .unwrap();
    s.schedule(1);
    assert_eq!(s.job(JobId(3)).unwrap().planned_start, Some(100));
    assert_eq!(s.remove_node(NodeId(0), 5), Err(vec![JobId(1)]));
    s.job_ended(JobId(1), 10);
    s.remove_node(NodeId(0), 10).unwrap();
    s.schedule(10);
    assert!(!running(&s, 3));
    assert_eq!(s.job(JobId(3)).unwrap().planned_start, Some(1000));
    s.job_ended(JobId(2), 1000);
    s.schedule(1000);
    assert_eq!(nodes_of(&s, 3), Some(vec![1]));
    assert!(running(&s, 3));
}
