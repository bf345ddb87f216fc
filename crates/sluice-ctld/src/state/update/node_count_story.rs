//! `scontrol update JobId=N NumNodes=...`: a pending job takes a new size as Slurm's
//! `_update_job` gives it; a refused count changes nothing; a running job keeps the
//! nodes it has.

use std::path::Path;

use sluice_proto::types::{tres_string, JobState};

use crate::state::tests::{alice, conf, desc, submit};
use crate::state::update::BAD_NODE_COUNT;
use crate::state::{Controller, JobId};
use sluice_core::{NodeId, Partition};

fn nodes(count: &str) -> Vec<(String, String)> {
    vec![("NumNodes".to_string(), count.to_string())]
}

/// Least and most nodes asked, tasks, and the TRES `scontrol show job` prints.
fn size(c: &Controller, id: u64) -> (Option<(u32, u32)>, u32, u32, String) {
    let j = c.job(JobId(id)).unwrap();
    (
        j.desc.nodes,
        j.min_nodes,
        j.ntasks,
        tres_string(&j.tres_req),
    )
}

#[test]
fn a_pending_jobs_node_count_changes_as_slurms_does() {
    // Three nodes of four CPUs. Job 1 waits an hour and asked one task (`-n 1`).
    let mut c = Controller::new(conf(3, 4), Path::new("/s"), vec![], vec![], 0);
    let mut d = desc(1, 600);
    d.begin = Some(3600);
    submit(&mut c, d, &mut 1, 0);
    let before = size(&c, 1);
    assert_eq!((before.1, before.2), (1, 1));

    // NumNodes=2: the least count only; its one task is raised to one a node.
    c.update_job(JobId(1), &nodes("2"), &alice(), 5).unwrap();
    let after = size(&c, 1);
    assert_eq!((after.0, after.1, after.2), (Some((2, 0)), 2, 2));
    assert!(after.3.starts_with("cpu=2,"), "{}", after.3);
    assert!(after.3.contains(",node=2"), "{}", after.3);

    // NumNodes=1-3: both; the tasks it was raised to stay (Slurm keeps them).
    c.update_job(JobId(1), &nodes("1-3"), &alice(), 6).unwrap();
    let (range, min, tasks, _) = size(&c, 1);
    assert_eq!((range, min, tasks), (Some((1, 3)), 1, 2));

    // More nodes than the partition has, none, a most below the least: refused, and
    // nothing changes.
    let kept = size(&c, 1);
    for bad in ["4", "0", "3-2"] {
        let e = c
            .update_job(JobId(1), &nodes(bad), &alice(), 7)
            .unwrap_err();
        assert_eq!(e.message, BAD_NODE_COUNT, "{bad}");
        assert_eq!(size(&c, 1), kept, "{bad}");
    }
    // The most alone (the REST API's `maximum_nodes`): taken; a least above it is
    // refused, as Slurm checks the two together; a most of 0 is none.
    c.update_job(JobId(1), &nodes("-2"), &alice(), 7).unwrap();
    assert_eq!(c.job(JobId(1)).unwrap().desc.nodes, Some((1, 2)));
    let e = c
        .update_job(JobId(1), &nodes("3"), &alice(), 7)
        .unwrap_err();
    assert_eq!(e.message, BAD_NODE_COUNT);
    c.update_job(JobId(1), &nodes("-0"), &alice(), 7).unwrap();
    assert_eq!(c.job(JobId(1)).unwrap().desc.nodes, Some((1, 0)));
    c.update_job(JobId(1), &nodes("3"), &alice(), 7).unwrap();
    assert_eq!(c.job(JobId(1)).unwrap().desc.nodes, Some((3, 0)));
    let kept = size(&c, 1);
    // `ALL` asks the count as it is.
    c.update_job(JobId(1), &nodes("ALL"), &alice(), 7).unwrap();
    assert_eq!(size(&c, 1), kept);
}

#[test]
fn listed_nodes_and_tasks_per_node_keep_their_say() {
    // Three nodes of four CPUs. Job 1 lists two nodes (`-w node01,node02`); job 2 asks
    // two tasks a node on one node (`--ntasks-per-node=2 -N 1`: two tasks, as Slurm's
    // sbatch fixes them); both wait an hour.
    let mut c = Controller::new(conf(3, 4), Path::new("/s"), vec![], vec![], 0);
    let mut listed = desc(1, 600);
    listed.ntasks = None;
    listed.nodelist = Some("node01,node02".into());
    listed.begin = Some(3600);
    submit(&mut c, listed, &mut 1, 0);
    let mut per_node = desc(1, 600);
    per_node.ntasks = None;
    per_node.ntasks_per_node = Some(2);
    per_node.nodes = Some((1, 1));
    per_node.begin = Some(3600);
    submit(&mut c, per_node, &mut 2, 0);
    assert_eq!((size(&c, 1).1, size(&c, 1).2), (2, 2));
    assert_eq!((size(&c, 2).1, size(&c, 2).2), (1, 2));

    // One node for job 1: its two listed nodes still stand, and it still waits.
    c.update_job(JobId(1), &nodes("1"), &alice(), 5).unwrap();
    let (range, min, tasks, _) = size(&c, 1);
    assert_eq!((range, min, tasks), (Some((1, 0)), 2, 2));
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Pending);

    // Two nodes for job 2: its two tasks stay two (one a node), not four.
    c.update_job(JobId(2), &nodes("2-2"), &alice(), 5).unwrap();
    let (range, min, tasks, _) = size(&c, 2);
    assert_eq!((range, min, tasks), (Some((2, 2)), 2, 2));
    assert_eq!(c.job(JobId(2)).unwrap().state, JobState::Pending);
}

#[test]
fn a_size_the_job_could_never_run_at_is_refused() {
    // Two nodes; job 1 leaves node02 out (`-x node02`) and waits.
    let mut c = Controller::new(conf(2, 4), Path::new("/s"), vec![], vec![], 0);
    let mut d = desc(1, 600);
    d.exclude = Some("node02".into());
    d.begin = Some(3600);
    submit(&mut c, d, &mut 1, 0);
    let kept = size(&c, 1);
    // Two nodes without node02 can never be: refused, and the job still waits as it
    // was rather than failing.
    let e = c
        .update_job(JobId(1), &nodes("2"), &alice(), 5)
        .unwrap_err();
    assert_eq!(e.message, "Requested node configuration is not available");
    assert_eq!(size(&c, 1), kept);
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Pending);
}

#[test]
fn a_size_and_a_partition_changed_together_are_checked_together() {
    // Two nodes in `debug`; `small` has node01 alone. Job 1 waits in `debug`.
    let mut config = conf(2, 4);
    config
        .cluster
        .partitions
        .push(Partition::new("small", vec![NodeId(0)]));
    let mut c = Controller::new(config, Path::new("/s"), vec![], vec![], 0);
    let mut d = desc(1, 600);
    d.begin = Some(3600);
    submit(&mut c, d, &mut 1, 0);
    let kept = size(&c, 1);
    // Two nodes in a partition of one, asked in one update: each alone is fine, the
    // two together could never run, so both are refused and the job waits as it was.
    let both = vec![
        ("NumNodes".to_string(), "2".to_string()),
        ("Partition".to_string(), "small".to_string()),
    ];
    let e = c.update_job(JobId(1), &both, &alice(), 5).unwrap_err();
    assert_eq!(e.message, "Requested node configuration is not available");
    let j = c.job(JobId(1)).unwrap();
    assert_eq!(
        (j.state, j.partition.as_str()),
        (JobState::Pending, "debug")
    );
    assert_eq!(size(&c, 1), kept);
    // With `debug` still among its partitions it could run there: taken.
    let either = vec![
        ("NumNodes".to_string(), "2".to_string()),
        ("Partition".to_string(), "small,debug".to_string()),
    ];
    c.update_job(JobId(1), &either, &alice(), 6).unwrap();
    assert_eq!(c.job(JobId(1)).unwrap().desc.nodes, Some((2, 0)));
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Pending);
    // Once it may begin, it runs on both nodes of `debug`.
    c.schedule(3600);
    let j = c.job(JobId(1)).unwrap();
    assert_eq!(
        (j.state, j.partition.as_str(), j.nodes.len()),
        (JobState::Running, "debug", 2)
    );
}

#[test]
fn a_running_job_keeps_its_nodes() {
    let mut c = Controller::new(conf(3, 4), Path::new("/s"), vec![], vec![], 0);
    submit(&mut c, desc(1, 600), &mut 1, 0);
    c.schedule(0);
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Running);
    let grow = c
        .update_job(JobId(1), &nodes("2"), &alice(), 5)
        .unwrap_err();
    assert_eq!(
        grow.message,
        "Requested operation not supported on this system"
    );
    // Its own count is no change; a range is for pending jobs only.
    c.update_job(JobId(1), &nodes("1"), &alice(), 5).unwrap();
    let range = c
        .update_job(JobId(1), &nodes("1-2"), &alice(), 5)
        .unwrap_err();
    assert_eq!(range.message, "Job is no longer pending execution");
    let j = c.job(JobId(1)).unwrap();
    assert_eq!((j.nodes.len(), j.desc.nodes), (1, None));
}
