//! A job queued before its partition was drained or made inactive stays queued, as in
//! Slurm: released from a hold or changed while it waits, it runs in a DRAIN
//! partition and waits in an INACTIVE one; a new job is refused by both.

use std::path::Path;

use sluice_proto::types::{JobState, PartitionUpdate};

use crate::state::tests::{alice, conf, desc, submit, with_short};
use crate::state::{Caller, Controller, JobId};

fn root() -> Caller {
    Caller {
        uid: 0,
        gid: 0,
        admin: true,
    }
}

fn set_state(c: &mut Controller, state: &str) {
    set_state_of(c, "debug", state);
}

fn set_state_of(c: &mut Controller, partition: &str, state: &str) {
    let u = PartitionUpdate {
        name: partition.into(),
        changes: vec![("State".into(), state.into())],
    };
    c.update_partition(&u, &root()).unwrap();
}

/// Alice's job submitted held into `debug`, one node of two CPUs.
fn held_job(c: &mut Controller, next: &mut u64) -> JobId {
    let (id, _) = submit(c, desc(1, 600), next, 0);
    c.set_hold(id, None, true, &alice(), 0).unwrap();
    id
}

#[test]
fn a_held_job_released_in_a_drained_partition_runs() {
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let held = held_job(&mut c, &mut next);
    set_state(&mut c, "DRAIN");
    // A new job is refused, with Slurm's words.
    let refused = c
        .prepare(desc(1, 600), &alice(), "alice", "users", 1)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "Required partition not available (inactive or drain)"
    );
    // The queued one is changed while it waits, then released: it runs.
    c.update_job(held, &[("TimeLimit".into(), "4".into())], &alice(), 2)
        .unwrap();
    c.set_hold(held, None, false, &alice(), 3).unwrap();
    c.schedule(3);
    let j = c.job(held).unwrap();
    assert_eq!((j.state, j.time_limit), (JobState::Running, Some(240)));
}

#[test]
fn a_held_job_released_in_an_inactive_partition_waits_until_it_is_up() {
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let held = held_job(&mut c, &mut next);
    set_state(&mut c, "INACTIVE");
    c.set_hold(held, None, false, &alice(), 1).unwrap();
    c.schedule(1);
    let j = c.job(held).unwrap();
    assert_eq!(
        (j.state, j.reason.as_str()),
        (JobState::Pending, "PartitionInactive")
    );
    set_state(&mut c, "UP");
    c.schedule(2);
    assert_eq!(c.job(held).unwrap().state, JobState::Running);
}

/// Alice's held job of `short,debug`, asking for node01's two CPUs.
fn held_in_short_and_debug(c: &mut Controller, next: &mut u64) -> JobId {
    let mut d = desc(2, 600);
    d.partition = Some("short,debug".into());
    d.hold = true;
    submit(c, d, next, 0).0
}

#[test]
fn a_job_of_two_partitions_keeps_the_one_drained_since_it_was_queued() {
    // node01 is in short and debug, node02 in debug only.
    let mut c = Controller::new(with_short(2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let held = held_in_short_and_debug(&mut c, &mut next);
    set_state_of(&mut c, "short", "DRAIN");
    // Its node count is checked as it was queued, not as a new submission.
    c.update_job(held, &[("NumNodes".into(), "1".into())], &alice(), 1)
        .unwrap();
    c.set_hold(held, None, false, &alice(), 2).unwrap();
    c.schedule(2);
    let j = c.job(held).unwrap();
    assert_eq!((j.state, &*j.partition), (JobState::Running, "short"));
}

#[test]
fn a_job_submitted_to_a_drained_partition_among_others_loses_it() {
    let mut c = Controller::new(with_short(2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    set_state_of(&mut c, "short", "DRAIN");
    let held = held_in_short_and_debug(&mut c, &mut next);
    assert_eq!(c.job(held).unwrap().partition, "debug");
    // Up again, it is not taken back.
    set_state_of(&mut c, "short", "UP");
    c.set_hold(held, None, false, &alice(), 1).unwrap();
    c.schedule(1);
    let j = c.job(held).unwrap();
    assert_eq!((j.state, &*j.partition), (JobState::Running, "debug"));
    // All of its partitions closed, it is refused.
    set_state_of(&mut c, "debug", "INACTIVE");
    set_state_of(&mut c, "short", "DRAIN");
    let mut d = desc(1, 600);
    d.partition = Some("short,debug".into());
    let refused = c.prepare(d, &alice(), "alice", "users", 2).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "Required partition not available (inactive or drain)"
    );
}

#[test]
fn a_job_moved_to_a_list_with_a_drained_partition_loses_it() {
    let mut c = Controller::new(with_short(2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let held = held_job(&mut c, &mut next);
    set_state_of(&mut c, "short", "DRAIN");
    c.update_job(
        held,
        &[("Partition".into(), "short,debug".into())],
        &alice(),
        1,
    )
    .unwrap();
    let j = c.job(held).unwrap();
    assert_eq!(
        (&*j.partition, j.desc.partition.as_deref()),
        ("debug", Some("debug"))
    );
    // Alone, a drained partition is refused.
    let refused = c
        .update_job(held, &[("Partition".into(), "short".into())], &alice(), 2)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "Required partition not available (inactive or drain)"
    );
}
