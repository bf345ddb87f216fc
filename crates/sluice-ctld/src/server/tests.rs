//! Stories of the controller's loop: scripted inputs, the exact effects in the order
//! decided, and the answers; and, through the executor and a real store, that what
//! reaches the disk is in that order too.

use std::path::{Path, PathBuf};

use sluice_core::JobId;
use sluice_proto::error::ErrorCode;
use sluice_proto::types::{
    CancelRequest, JobDescription, JobEnded, JobRecord, JobState, SubmitReply,
};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::oneshot;

use super::executor::Executor;
use super::input::{Change, Input, Request};
use super::owner::{Outcome, Owner};
use crate::config::ClusterConfig;
use crate::state::tests::{alice, conf};
use crate::state::{Caller, Controller, Effect};

fn root() -> Caller {
    Caller {
        uid: 0,
        gid: 0,
        admin: true,
    }
}

fn desc(ntasks: u32) -> JobDescription {
    JobDescription {
        name: "job".into(),
        ntasks: Some(ntasks),
        time_limit: Some(Some(600)),
        work_dir: "/home/alice".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        submit_host: "login".into(),
        ..Default::default()
    }
}

/// A loop driven by hand: inputs in, effects out, "the disk" acknowledging at once.
struct Script {
    owner: Owner,
    /// The loop's own inputs (a submission's acknowledgement comes back here).
    own: UnboundedReceiver<Input>,
    /// Every effect so far, in order.
    effects: Vec<Effect>,
}

impl Script {
    fn new(conf: ClusterConfig) -> Self {
        let (tx, own) = unbounded_channel();
        let ctl = Controller::new(conf, Path::new("/state"), vec![], vec![], 0);
        let mut s = Script {
            owner: Owner::new(ctl, tx, None),
            own,
            effects: Vec::new(),
        };
        // The first pass saves the fair-share usage it starts from.
        assert_eq!(story(&s.pass(0)), ["save usage"]);
        s
    }

    /// Handles `input` at `now`, as if its writes were on disk at once; inputs the loop
    /// sends itself are handled in turn. Returns the effects of this step.
    fn feed(&mut self, input: Input, now: i64) -> Vec<Effect> {
        let start = self.effects.len();
        let mut next = Some(input);
        while let Some(input) = next.take() {
            let out = self.owner.handle(input, now);
            self.settle(out);
            next = self.own.try_recv().ok();
        }
        self.effects[start..].to_vec()
    }

    /// A scheduling pass at `now`; its effects.
    fn pass(&mut self, now: i64) -> Vec<Effect> {
        let start = self.effects.len();
        let out = self.owner.pass(now);
        self.settle(out);
        self.effects[start..].to_vec()
    }

    fn settle(&mut self, out: Outcome) {
        self.effects.extend(out.effects);
        if let Some(then) = out.then {
            then(Ok(()));
        }
        if let Some(answer) = out.answer {
            answer();
        }
    }

    /// Submits `d` as alice; the id it answers.
    fn submit(&mut self, d: JobDescription, now: i64) -> (JobId, Vec<Effect>) {
        let (reply, mut rx) = oneshot::channel();
        let effects = self.feed(
            Input::Request(Request::Submit {
                desc: Box::new(d),
                caller: alice(),
                user: "alice".into(),
                group: "alice".into(),
                reply,
            }),
            now,
        );
        let SubmitReply { job_id, .. } = rx.try_recv().expect("answered").expect("accepted");
        (JobId(job_id), effects)
    }

    /// Asks for a change as `who`; its answer and effects.
    fn change(
        &mut self,
        change: Change,
        who: Caller,
        now: i64,
    ) -> (
        Result<Vec<String>, sluice_proto::error::ApiError>,
        Vec<Effect>,
    ) {
        let (reply, mut rx) = oneshot::channel();
        let effects = self.feed(
            Input::Request(Request::Change {
                change,
                caller: who,
                reply,
            }),
            now,
        );
        (rx.try_recv().expect("answered"), effects)
    }

    /// A cancel fed in as `scancel` sends it; its answer and the effects.
    fn cancel(
        &mut self,
        req: CancelRequest,
        who: Caller,
        now: i64,
    ) -> (
        Result<sluice_proto::types::Cancelled, sluice_proto::error::ApiError>,
        Vec<Effect>,
    ) {
        let (reply, mut rx) = oneshot::channel();
        let effects = self.feed(
            Input::Request(Request::Cancel {
                req: Box::new(req),
                caller: who,
                reply,
            }),
            now,
        );
        (rx.try_recv().expect("answered"), effects)
    }
}

/// An effect in a few words: what it does to which job, and the state it writes.
fn story(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .map(|e| match e {
            Effect::Insert { records: rs, .. } => format!("insert {} {:?}", rs[0].id, rs[0].state),
            Effect::Persist(r) => format!(
                "persist {} {:?}{}",
                r.id,
                r.state,
                if r.held() { " held" } else { "" }
            ),
            Effect::PersistRun(r) => format!("keep run {}.{} {:?}", r.id, r.restarts, r.state),
            Effect::PersistStep(s) => format!("step {} {:?} {:?}", s.job_id, s.step, s.state),
            Effect::Launch { node, order } => format!("launch {} on {node}", order.job.id),
            Effect::Terminate { nodes, job_id, .. } => {
                format!("terminate {job_id} on {}", nodes.join(","))
            }
            Effect::EndRun {
                node,
                job_id,
                run,
                state,
            } => format!("end run {job_id}.{run} on {node} {state:?}"),
            Effect::Signal { job_id, signal, .. } => format!("signal {job_id} {signal}"),
            Effect::PersistAccounts(rows)
                if rows
                    .iter()
                    .all(|r| r.kind == "usage" || r.kind == "limit_usage") =>
            {
                "save usage".into()
            }
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_submission_is_written_then_queued_started_and_answered() {
    // One 4-CPU node. A 2-task job: its record is inserted with a new id; once on disk
    // the job enters the queue and starts at once (marked running before it is
    // launched), and only then does its submitter hear its id — without waiting for
    // the start to be on disk too: the id was what had to be durable.
    let mut s = Script::new(conf(1, 4));
    let (reply, mut rx) = oneshot::channel();
    let out = s.owner.handle(
        Input::Request(Request::Submit {
            desc: Box::new(desc(2)),
            caller: alice(),
            user: "alice".into(),
            group: "alice".into(),
            reply,
        }),
        100,
    );
    assert_eq!(story(&out.effects), ["insert 1 Pending"]);
    assert!(rx.try_recv().is_err(), "no id before the record is on disk");
    // The disk acknowledges: the loop hears it as an input of its own.
    (out.then.expect("answered once durable"))(Ok(()));
    let committed = s.own.try_recv().expect("acknowledged");
    assert!(rx.try_recv().is_err(), "no id before the job is queued");
    let out = s.owner.handle(committed, 100);
    assert_eq!(
        story(&out.effects),
        ["persist 1 Running", "launch 1 on node01"]
    );
    assert!(
        out.then.is_none(),
        "the answer waits for no write of the pass"
    );
    assert!(
        rx.try_recv().is_err(),
        "no id before the effects are handed over"
    );
    (out.answer.expect("answered once handed over"))();
    assert_eq!(rx.try_recv().unwrap().unwrap().job_id, 1);
}

#[test]
fn a_submission_in_a_burst_is_answered_at_once_and_started_by_the_pass_after_the_burst() {
    // One 4-CPU node. A submission acknowledged while several inputs wait behind it is
    // answered without a pass of its own; the pass the loop runs once the burst is
    // handled starts it.
    let mut s = Script::new(conf(1, 4));
    let (reply, mut rx) = oneshot::channel();
    let out = s.owner.handle(
        Input::Request(Request::Submit {
            desc: Box::new(desc(2)),
            caller: alice(),
            user: "alice".into(),
            group: "alice".into(),
            reply,
        }),
        100,
    );
    (out.then.expect("answered once durable"))(Ok(()));
    let committed = s.own.try_recv().expect("acknowledged");
    s.owner.set_waiting(8);
    let out = s.owner.handle(committed, 100);
    assert!(out.effects.is_empty(), "{:?}", story(&out.effects));
    (out.answer.expect("answered"))();
    assert_eq!(rx.try_recv().unwrap().unwrap().job_id, 1);
    assert!(s.owner.pass_wanted(false));
    assert_eq!(
        story(&s.pass(100)),
        ["persist 1 Running", "launch 1 on node01"]
    );
}

#[test]
fn a_refused_submission_writes_nothing_and_uses_no_id() {
    let mut s = Script::new(conf(1, 4));
    let (reply, mut rx) = oneshot::channel();
    let mut bad = desc(1);
    bad.partition = Some("nosuch".into());
    let out = s.owner.handle(
        Input::Request(Request::Submit {
            desc: Box::new(bad),
            caller: alice(),
            user: "alice".into(),
            group: "alice".into(),
            reply,
        }),
        100,
    );
    assert!(out.effects.is_empty() && out.then.is_none());
    let e = rx.try_recv().unwrap().unwrap_err();
    assert_eq!(e.message, "Invalid partition name specified");
    let (id, _) = s.submit(desc(1), 101);
    assert_eq!(id.0, 1, "the refusal used no id");
}

#[test]
fn two_changes_of_one_job_are_written_in_the_order_decided() {
    // A pending job (the node is busy) is held, released and cancelled, each by a
    // request of its own: the three writes of its record come out in that order, each
    // answered after its own. (Before the loop, each request's handler wrote its record
    // after letting go of the state, and the store kept whichever arrived last.)
    let mut s = Script::new(conf(1, 4));
    let (big, effects) = s.submit(desc(4), 0);
    assert_eq!(
        story(&effects),
        [
            "insert 1 Pending",
            "persist 1 Running",
            "launch 1 on node01"
        ]
    );
    let (job, effects) = s.submit(desc(4), 1);
    assert_eq!(story(&effects), ["insert 2 Pending"]);
    let hold = Change::Hold {
        id: job,
        tasks: None,
        user: false,
    };
    let (r, held) = s.change(hold, alice(), 2);
    r.unwrap();
    let (r, released) = s.change(
        Change::Release {
            id: job,
            tasks: None,
        },
        alice(),
        3,
    );
    r.unwrap();
    let cancel = CancelRequest {
        jobs: vec![(job.0, None)],
        ..Default::default()
    };
    let (r, cancelled) = s.cancel(cancel, alice(), 4);
    r.unwrap();
    assert_eq!(story(&held), ["persist 2 Pending held"]);
    // Released: its record, then again as it re-enters the queue.
    assert_eq!(story(&released), ["persist 2 Pending", "persist 2 Pending"]);
    assert_eq!(story(&cancelled), ["persist 2 Cancelled"]);
    // The running job ends; the agent reports it.
    let (reply, mut rx) = oneshot::channel();
    let ended = s.feed(
        Input::Request(Request::AgentEnded {
            report: JobEnded {
                job_id: big.0,
                run: 0,
                node: "node01".into(),
                state: JobState::Completed,
                exit_code: 0,
                signal: 0,
                end: 5,
                usage: None,
            },
            reply,
        }),
        5,
    );
    rx.try_recv().expect("acknowledged once durable");
    assert_eq!(
        story(&ended),
        ["persist 1 Completed", "step 1 Batch Completed"]
    );
}

#[test]
fn refusals_are_answered_by_their_code_and_change_nothing() {
    let mut s = Script::new(conf(1, 4));
    let (job, _) = s.submit(desc(1), 0);
    let bob = Caller {
        uid: 1001,
        gid: 1001,
        admin: false,
    };
    let (r, effects) = s.change(
        Change::Requeue {
            id: job,
            tasks: None,
            flags: Default::default(),
        },
        bob,
        1,
    );
    assert_eq!(r.unwrap_err().code, ErrorCode::AccessDenied);
    assert!(effects.is_empty());
    let (r, effects) = s.change(
        Change::Release {
            id: JobId(99),
            tasks: None,
        },
        root(),
        1,
    );
    let e = r.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ErrorCode::InvalidJobId, "Invalid job id specified")
    );
    assert!(effects.is_empty());
    assert!(s.pass(2).is_empty(), "nothing is left to do");
}

#[test]
fn an_unreachable_agent_requeues_its_launch_and_its_node_waits_for_it() {
    // The launch cannot reach node01's agent: the job (which may be requeued, Slurm's
    // default) goes back to the queue and starts on node02, and node01 takes no work
    // until its agent registers again (its other jobs, if any, would run on under
    // their supervisors). Should the agent have started the run after all, it is
    // ended there.
    let mut s = Script::new(conf(2, 4));
    let (job, effects) = s.submit(desc(4), 0);
    assert_eq!(story(&effects)[2], "launch 1 on node01");
    let effects = s.feed(
        Input::Unreachable {
            node: "node01".into(),
            job,
            run: 0,
            why: "connection refused".into(),
        },
        1,
    );
    // The run is kept for `sacct -D` as REQUEUED, the job goes back to the queue
    // and, node01 being down, starts on node02 in the same step.
    assert_eq!(
        story(&effects),
        [
            "end run 1.0 on node01 NodeFail",
            "keep run 1.0 Requeued",
            "persist 1 Pending",
            "persist 1 Pending",
            "persist 1 Pending",
            "persist 1 Running",
            "launch 1 on node02",
        ]
    );
    let node01 = s
        .owner
        .controller()
        .nodes()
        .into_iter()
        .find(|n| n.name == "node01")
        .unwrap();
    // (Its agent never registered in this script: down until it does.)
    assert_eq!(
        (
            node01.state.as_str(),
            node01.agent_up,
            node01.reason.as_deref()
        ),
        ("down", false, Some("Not responding"))
    );
    assert_eq!(s.owner.controller().job(job).unwrap().restarts, 1);
    assert!(s.pass(200).is_empty());
}

/// The agent of `node` registers over TCP from `from` at `now`.
fn register(s: &mut Script, node: &str, from: &str, now: i64) {
    let (reply, mut rx) = oneshot::channel();
    s.feed(
        Input::Request(Request::AgentRegistered {
            registration: crate::state::Registration {
                node: node.into(),
                from: Some(from.into()),
                ..Default::default()
            },
            dynamic: None,
            reply,
        }),
        now,
    );
    rx.try_recv().expect("answered").expect("registered");
}

/// A heartbeat from `node`'s agent at `from`: whether it counted, and its effects.
fn heartbeat(s: &mut Script, node: &str, from: &str, now: i64) -> (bool, Vec<Effect>) {
    let (reply, mut rx) = oneshot::channel();
    let effects = s.feed(
        Input::Request(Request::AgentHeartbeat {
            node: node.into(),
            from: Some(from.into()),
            reply,
        }),
        now,
    );
    (rx.try_recv().expect("answered").0, effects)
}

/// The agents the watch would ping at `now`.
fn to_ping(s: &mut Script, now: i64) -> Vec<String> {
    let (reply, mut rx) = oneshot::channel();
    s.feed(Input::Request(Request::AgentsToPing(reply)), now);
    rx.try_recv().expect("answered")
}

/// Whether `node` responds (`sinfo` shows no `*`).
fn responding(s: &Script, node: &str) -> bool {
    s.owner
        .controller()
        .nodes()
        .into_iter()
        .find(|n| n.name == node)
        .unwrap()
        .agent_up
}

/// The seconds a heartbeat from `node` at `now` is told to wait for the next one.
fn heartbeat_every(s: &mut Script, node: &str, now: i64) -> u64 {
    let (reply, mut rx) = oneshot::channel();
    s.feed(
        Input::Request(Request::AgentHeartbeat {
            node: node.into(),
            from: Some("10.0.0.1".into()),
            reply,
        }),
        now,
    );
    let (counted, every) = rx.try_recv().expect("answered");
    assert!(counted, "{node}'s heartbeat at {now} did not count");
    every
}

/// A cluster of `nodes` nodes with `SlurmdTimeout=timeout`, every agent registered at 0.
fn registered_cluster(nodes: u32, timeout: i64) -> Script {
    let mut c = conf(nodes, 4);
    c.net.slurmd_timeout = timeout;
    let mut s = Script::new(c);
    for i in 1..=nodes {
        register(&mut s, &format!("node{i:02}"), "10.0.0.1", 0);
    }
    s
}

#[test]
fn a_large_cluster_spreads_its_agents_heartbeats_and_pings_a_resumed_node_at_once() {
    // 1,500 registered agents: every two seconds they would send 750 heartbeats a
    // second; the controller asks each for one every 3 s (500 a second in all), and
    // pings an agent only after two such intervals of silence.
    let mut s = registered_cluster(1500, 300);
    // (The watch's list comes in name order.)
    let mut all: Vec<String> = (1..=1500).map(|i| format!("node{i:02}")).collect();
    all.sort();
    for n in &all {
        assert_eq!(heartbeat_every(&mut s, n, 0), 3);
    }
    assert!(to_ping(&mut s, 5).is_empty());
    assert_eq!(to_ping(&mut s, 6), all);
    for n in &all {
        assert_eq!(heartbeat_every(&mut s, n, 6), 3);
    }
    // An operator drains node02 and resumes it: it takes work once its agent answers
    // again, and with heartbeats 3 s apart the watch asks at once instead of waiting.
    for (state, t) in [("DRAIN", 7), ("RESUME", 8)] {
        let update = Change::UpdateNodes(sluice_proto::types::NodeUpdate {
            nodes: "node02".into(),
            state: state.into(),
            reason: Some("swap".into()),
        });
        s.change(update, root(), t).0.unwrap();
    }
    assert_eq!(to_ping(&mut s, 8), ["node02"]);
    // Still silent: asked each second; the others, heard from at 6, not before 12.
    assert_eq!(to_ping(&mut s, 11), ["node02"]);
    assert_eq!(to_ping(&mut s, 12), all);
    // With a short SlurmdTimeout the interval stays within a quarter of it (but never
    // under two seconds); with SlurmdTimeout=0 (never DOWN) nothing caps it.
    let mut s = registered_cluster(1500, 8);
    assert_eq!(heartbeat_every(&mut s, "node01", 0), 2);
    let mut s = registered_cluster(1500, 0);
    assert_eq!(heartbeat_every(&mut s, "node01", 0), 3);
    // A small cluster keeps Sluice's two seconds, counting registered agents only:
    // 1,500 nodes of which one agent registered.
    let mut s = Script::new(conf(1500, 4));
    register(&mut s, "node01", "10.0.0.1", 0);
    assert_eq!(heartbeat_every(&mut s, "node01", 0), 2);
}

#[test]
fn heartbeats_spare_an_agent_the_pings_and_its_silence_gets_it_pinged_then_not_responding() {
    // One 4-CPU node whose agent registers over TCP at t=0 and sends a heartbeat every
    // two seconds: the watch never pings it (an idle cluster costs the controller no
    // outgoing request).
    let mut s = Script::new(conf(1, 4));
    register(&mut s, "node01", "10.0.0.1", 0);
    for t in 0..=11 {
        if t % 2 == 0 && t > 0 {
            assert_eq!(heartbeat(&mut s, "node01", "10.0.0.1", t), (true, vec![]));
        }
        assert!(to_ping(&mut s, t).is_empty(), "pinged at t={t}");
    }
    // Silent from t=10 on (a cut link): two heartbeats missed, it is pinged at t=14,
    // and each second after while it stays silent.
    assert!(to_ping(&mut s, 13).is_empty());
    assert_eq!(to_ping(&mut s, 14), ["node01"]);
    assert_eq!(to_ping(&mut s, 15), ["node01"]);
    // The ping goes unanswered: not responding, no new work.
    s.feed(
        Input::AgentsChecked {
            answered: vec![],
            gone: vec![],
            unanswered: vec!["node01".into()],
        },
        16,
    );
    assert!(!responding(&s, "node01"));
    let (job, effects) = s.submit(desc(4), 16);
    assert!(!story(&effects).iter().any(|e| e.starts_with("launch")));
    // A heartbeat again before SlurmdTimeout: responding, the job starts, no ping.
    let (counted, effects) = heartbeat(&mut s, "node01", "10.0.0.1", 17);
    assert!(counted);
    assert!(responding(&s, "node01"));
    assert!(story(&effects).contains(&format!("launch {job} on node01")));
    assert!(to_ping(&mut s, 18).is_empty());
    // An answered ping counts as hearing from it too.
    assert_eq!(to_ping(&mut s, 21), ["node01"]);
    s.feed(
        Input::AgentsChecked {
            answered: vec!["node01".into()],
            gone: vec![],
            unanswered: vec![],
        },
        21,
    );
    assert!(to_ping(&mut s, 24).is_empty());
}

#[test]
fn a_node_whose_agent_never_registers_after_a_start_is_listed_down_after_slurmd_timeout() {
    // Two nodes; SlurmdTimeout=10. The controller starts at 0 and node01's agent
    // registers; node02's never does, and is never pinged (it never registered), so no
    // agent's answer names it: the listings still show it DOWN once SlurmdTimeout has
    // passed, as the controller has it.
    let mut conf = conf(2, 4);
    conf.net.slurmd_timeout = 10;
    let (tx, own) = unbounded_channel();
    let mut ctl = Controller::new(conf, Path::new("/state"), vec![], vec![], 0);
    ctl.await_agents(0);
    let mut s = Script {
        owner: Owner::new(ctl, tx, None),
        own,
        effects: Vec::new(),
    };
    s.pass(0);
    register(&mut s, "node01", "10.0.0.1", 0);
    let listed = |s: &Script| -> Vec<(String, String, bool)> {
        s.owner
            .published()
            .latest()
            .node_listing()
            .nodes()
            .map(|n| (n.name.clone(), n.state.clone(), n.agent_up))
            .collect()
    };
    let node = |name: &str, state: &str, up: bool| (name.to_string(), state.to_string(), up);
    assert_eq!(
        listed(&s),
        [
            node("node01", "idle", true),
            node("node02", "unknown", false)
        ]
    );
    for t in [9, 10] {
        s.feed(
            Input::AgentsChecked {
                answered: vec![],
                gone: vec![],
                unanswered: vec![],
            },
            t,
        );
    }
    assert_eq!(
        listed(&s),
        [node("node01", "idle", true), node("node02", "down", false)]
    );
    let published: Vec<_> = s
        .owner
        .published()
        .latest()
        .node_listing()
        .nodes()
        .cloned()
        .collect();
    assert_eq!(published, s.owner.controller().nodes());
}

#[test]
fn a_heartbeat_the_controller_does_not_count_makes_the_agent_register_again() {
    // Only the registered agent's heartbeat counts: not one from another address, not
    // one for a node never registered (a restarted controller), not one from an agent
    // found gone (its socket refused a ping). Told so, the agent registers again.
    let mut s = Script::new(conf(2, 4));
    register(&mut s, "node01", "10.0.0.1", 0);
    assert!(!heartbeat(&mut s, "node01", "10.0.0.9", 2).0);
    assert!(!heartbeat(&mut s, "node02", "10.0.0.2", 2).0);
    assert!(to_ping(&mut s, 2).is_empty());
    s.feed(
        Input::AgentsChecked {
            answered: vec![],
            gone: vec!["node01".into()],
            unanswered: vec![],
        },
        4,
    );
    assert!(!responding(&s, "node01"));
    assert!(!heartbeat(&mut s, "node01", "10.0.0.1", 5).0);
    assert!(!responding(&s, "node01"));
    register(&mut s, "node01", "10.0.0.1", 6);
    assert!(responding(&s, "node01"));
    assert!(heartbeat(&mut s, "node01", "10.0.0.1", 8).0);
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-loop-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The job record the store holds for `id`.
fn stored(store_path: &Path, id: u64) -> JobRecord {
    let (_s, _w, snap) =
        sluice_store::Store::open(store_path, 1, super::accounting::keys_of_record).unwrap();
    let row = snap.jobs.iter().find(|r| r.id == id).expect("stored");
    serde_json::from_str(&row.record).unwrap()
}

/// A loop with its executor and a real store in a directory of its own, for the
/// stories that follow what reaches the disk. `agents` names the nodes whose agents
/// the executor may order (none listens).
struct OnDisk {
    db: PathBuf,
    store: sluice_store::Store,
    writer: sluice_store::Writer,
    own: UnboundedReceiver<Input>,
    exec: Executor,
    owner: Owner,
    tasks: super::agents::AgentTasks,
}

impl OnDisk {
    fn new(name: &str, agents: &[&str]) -> OnDisk {
        let dir = temp_dir(name);
        let db = dir.join("sluice.db");
        let (store, writer, _) =
            sluice_store::Store::open(&db, 1, super::accounting::keys_of_record).unwrap();
        let (tx, own) = unbounded_channel();
        let clients = agents
            .iter()
            .map(|n| {
                let socket = sluice_proto::paths::agent_socket(&dir, n);
                (n.to_string(), sluice_proto::Client::new(socket))
            })
            .collect();
        let (agents, tasks) = super::agents::Agents::start(
            &std::sync::Arc::new(std::sync::Mutex::new(clients)),
            std::sync::Arc::new(|e: &str| sluice_proto::Client::new(e)),
            "test".into(),
            30,
            tx.clone(),
            store.clone(),
        );
        let exec = Executor::new(store.clone(), agents);
        let ctl = Controller::new(conf(1, 4), &dir, vec![], vec![], 0);
        let owner = Owner::new(ctl, tx, None);
        OnDisk {
            db,
            store,
            writer,
            own,
            exec,
            owner,
            tasks,
        }
    }

    /// Carries out what the loop decided, then answers.
    fn carry(&mut self, out: Outcome) {
        let answer = out.answer;
        self.exec
            .carry_out(self.owner.take_audit(), out.effects, out.then);
        if let Some(answer) = answer {
            answer();
        }
    }

    /// Hands the loop an input and carries out what it decides.
    fn run(&mut self, input: Input, now: i64) {
        let out = self.owner.handle(input, now);
        self.carry(out);
    }

    /// The next input the executor or the agents give back to the loop.
    async fn heard(&mut self) -> Input {
        self.own.recv().await.expect("an input for the loop")
    }

    /// Lets the executor and the agents' tasks finish and closes the store; the
    /// database's path, to read it as a restarted controller would.
    async fn close(self) -> PathBuf {
        self.exec.finish();
        self.tasks.drained(std::time::Duration::from_secs(5)).await;
        drop(self.store);
        drop(self.writer);
        self.db
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_disk_sees_a_start_and_its_end_in_the_order_decided() {
    // Through the executor and a real store: a job starts (its record written
    // RUNNING, then its launch ordered) and its end is reported right after. Both
    // writes reach the disk in decision order, so the store ends with COMPLETED. (Before
    // the loop, the start's and the end's handlers each wrote after letting go of the
    // state: the RUNNING record could land last, and a restarted controller would
    // have thought the job still running.)
    let mut d = OnDisk::new("order", &["node01"]);
    let (reply, rx) = oneshot::channel();
    d.run(
        Input::Request(Request::Submit {
            desc: Box::new(desc(4)),
            caller: alice(),
            user: "alice".into(),
            group: "alice".into(),
            reply,
        }),
        10,
    );
    // The record is on disk: the loop hears it.
    let committed = d.heard().await;
    assert!(matches!(committed, Input::Committed { .. }));
    d.run(committed, 10);
    let (ended_reply, ended) = oneshot::channel();
    d.run(
        Input::Request(Request::AgentEnded {
            report: JobEnded {
                job_id: 1,
                run: 0,
                node: "node01".into(),
                state: JobState::Completed,
                exit_code: 0,
                signal: 0,
                end: 10,
                usage: None,
            },
            reply: ended_reply,
        }),
        10,
    );
    let id = rx.await.unwrap().unwrap().job_id;
    ended.await.unwrap();
    // No agent listens: the launch could not be delivered, and the loop hears of it
    // (after the record was on disk).
    match d.heard().await {
        Input::Unreachable { node, .. } => assert_eq!(node, "node01"),
        _ => panic!("expected the unreachable agent"),
    }
    let db = d.close().await;
    let r = stored(&db, id);
    assert_eq!((r.id, r.state), (1, JobState::Completed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_script_and_environment_stay_in_the_store_until_its_launch_is_sent() {
    // Through the executor and a real store: the submission's script and environment
    // are written apart from its record, the controller keeps neither, and its launch
    // leaves the loop with Slurm's variables only, completed from the store by the
    // node's order queue (the submitted variables under Slurm's).
    let mut d = OnDisk::new("scripts", &[]);
    let submitted = vec![
        ("KEPT_MARK".to_string(), "from the shell".to_string()),
        ("SLURM_JOB_ID".to_string(), "stale".to_string()),
    ];
    let (reply, rx) = oneshot::channel();
    d.run(
        Input::Request(Request::Submit {
            desc: Box::new(JobDescription {
                environment: submitted.clone(),
                ..desc(4)
            }),
            caller: alice(),
            user: "alice".into(),
            group: "alice".into(),
            reply,
        }),
        10,
    );
    let committed = d.heard().await;
    let out = d.owner.handle(committed, 10);
    let mut order = out
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::Launch { order, .. } => Some(order.clone()),
            _ => None,
        })
        .expect("it starts at once");
    d.carry(out);
    let id = rx.await.unwrap().unwrap().job_id;
    assert_eq!(id, 1);
    assert!(order.job.desc.script.is_empty());
    assert!(!order.environment.iter().any(|(k, _)| k == "KEPT_MARK"));
    // What `scontrol show job` reads, from the published snapshot.
    let r = d.owner.published().latest().job(JobId(id)).expect("known");
    assert!(r.desc.script.is_empty() && r.desc.environment.is_empty());
    // On disk: the record without them, their own row with them.
    d.store.sync().unwrap();
    let rows = d.store.load().unwrap().jobs;
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].record.contains("KEPT_MARK") && !rows[0].record.contains("#!/bin/sh"));
    let kept = crate::state::BatchScript::from_store(d.store.script(id).unwrap().expect("kept"));
    assert_eq!(
        kept,
        Ok(crate::state::BatchScript {
            script: "#!/bin/sh\ntrue\n".into(),
            environment: submitted,
        })
    );
    super::agents::with_script(&d.store, &mut order).unwrap();
    assert_eq!(order.job.desc.script, "#!/bin/sh\ntrue\n");
    let env: std::collections::BTreeMap<_, _> = order.environment.iter().cloned().collect();
    assert_eq!(env["KEPT_MARK"], "from the shell");
    assert_eq!(env["SLURM_JOB_ID"], "1");
    assert_eq!(env["SLURM_JOB_NAME"], "job");
    d.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_is_one_commit_with_its_audit_trail_and_accrue_time() {
    // Through the executor and a real store: each submission reaches the disk in one
    // transaction (one sync of SQLite's log) that holds its record, the audit trail's
    // record of its submission and, for a job eligible at once, the time it accrues
    // age from; once the loop has queued it nothing more is written for it. A held
    // job (`sbatch -H`), then one whose `singleton` dependency is satisfied at once
    // and which begins later. (Before, the trail went in a second transaction right
    // after the job was queued, and so did the accrue time of a job with a
    // dependency: two syncs per submission.)
    let mut d = OnDisk::new("one-commit", &[]);
    let now = 10;
    // The first pass (and the audit sweep of this second) before any submission.
    let out = d.owner.pass(now);
    d.carry(out);
    d.store.sync().unwrap();
    let held = JobDescription {
        hold: true,
        ..desc(1)
    };
    let singleton = JobDescription {
        name: "alone".into(),
        dependency: Some("singleton".into()),
        begin: Some(now + 1000),
        ..desc(1)
    };
    for (n, job) in [held, singleton].into_iter().enumerate() {
        let before = d.store.commits();
        let (reply, rx) = oneshot::channel();
        d.run(
            Input::Request(Request::Submit {
                desc: Box::new(job),
                caller: alice(),
                user: "alice".into(),
                group: "alice".into(),
                reply,
            }),
            now,
        );
        let committed = d.heard().await;
        d.run(committed, now);
        let id = rx.await.unwrap().unwrap().job_id;
        assert_eq!(id, n as u64 + 1);
        d.store.sync().unwrap();
        assert_eq!(d.store.commits() - before, 1, "job {id}: one commit");
    }
    let kinds = |id: u64| -> Vec<String> {
        let filter = sluice_store::AuditFilter {
            job: Some(id),
            ..Default::default()
        };
        let rows = d.store.audit_events(&filter).unwrap();
        rows.into_iter().map(|r| r.kind).collect()
    };
    assert_eq!(kinds(1), ["submitted", "held"]);
    assert_eq!(kinds(2), ["submitted"]);
    let db = d.close().await;
    // What a restarted controller reads: the held job accrues nothing yet; the other
    // accrues from its begin time, as the queued job did.
    assert_eq!(stored(&db, 1).accrue_time, None);
    assert_eq!(stored(&db, 2).accrue_time, Some(now + 1000));
    assert_eq!(stored(&db, 2).state, JobState::Pending);
}

#[test]
fn records_that_carry_their_script_move_it_to_its_table_at_start_up() {
    // A database written before scripts had a table of their own: a job and an array's
    // two tasks, each record with the script and environment.
    let dir = temp_dir("move");
    let db = dir.join("sluice.db");
    let old = |id: u64, array: Option<(u64, u32)>| JobRecord {
        id,
        array,
        desc: JobDescription {
            environment: vec![("KEPT_MARK".into(), format!("of {id}"))],
            ..desc(1)
        },
        ..JobRecord::default()
    };
    let mut records = vec![old(1, None), old(2, Some((2, 1))), old(3, Some((2, 0)))];
    records[2].desc.environment = records[1].desc.environment.clone();
    {
        let (store, _writer, _) =
            sluice_store::Store::open(&db, 1, super::accounting::keys_of_record).unwrap();
        for r in &records {
            let row = serde_json::to_string(r).unwrap();
            let keys = super::accounting::job_keys(r);
            store
                .insert_jobs(r.id, vec![(keys, row)])
                .recv()
                .unwrap()
                .unwrap();
        }
    }
    let (store, writer, snap) =
        sluice_store::Store::open(&db, 1, super::accounting::keys_of_record).unwrap();
    let mut jobs: Vec<JobRecord> = snap
        .jobs
        .iter()
        .map(|r| serde_json::from_str(&r.record).unwrap())
        .collect();
    super::move_scripts_to_their_table(&store, &mut jobs).unwrap();
    assert!(jobs
        .iter()
        .all(|r| r.desc.script.is_empty() && r.desc.environment.is_empty()));
    drop(store);
    drop(writer);
    let (store, _writer, snap) =
        sluice_store::Store::open(&db, 1, super::accounting::keys_of_record).unwrap();
    assert!(snap.jobs.iter().all(|r| !r.record.contains("KEPT_MARK")));
    let kept = |id: u64| {
        store
            .script(id)
            .unwrap()
            .map(|s| crate::state::BatchScript::from_store(s).unwrap())
    };
    let env = |id: u64| vec![("KEPT_MARK".to_string(), format!("of {id}"))];
    assert_eq!(
        kept(1).map(|s| (s.script, s.environment)),
        Some(("#!/bin/sh\ntrue\n".into(), env(1)))
    );
    assert_eq!(
        kept(2).map(|s| s.environment),
        Some(env(2)),
        "the array's, for its tasks"
    );
    assert_eq!(kept(3), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_answers_every_request_in_flight_and_keeps_every_acknowledged_job() {
    // The whole daemon, in process: 40 submitters race a stop. Every submission that
    // got an id is on disk after the stop; none is left hanging; a submission refused
    // for the stop says so.
    let dir = temp_dir("drain");
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let state = dir.clone();
    let daemon = tokio::spawn(async move {
        super::run(conf(1, 4), &state, super::Network::default(), async move {
            let _ = stop_rx.await;
        })
        .await
    });
    let socket = sluice_proto::paths::controller_socket(&dir);
    let client = sluice_proto::Client::new(&socket);
    for _ in 0..200 {
        if client.get::<serde_json::Value>("/v1/ping").is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let submitters: Vec<_> = (0..40)
        .map(|i| {
            let client = client.clone();
            std::thread::spawn(move || {
                // Some start before the stop, some race it.
                std::thread::sleep(std::time::Duration::from_millis(5 * i));
                client.post::<_, SubmitReply>("/v1/jobs", &desc(1))
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    stop_tx.send(()).unwrap();
    let results: Vec<_> = tokio::task::spawn_blocking(move || {
        submitters
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    daemon.await.unwrap().expect("the daemon stops cleanly");
    let ids: Vec<u64> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().map(|s| s.job_id))
        .collect();
    assert!(!ids.is_empty(), "submissions before the stop are answered");
    for r in &results {
        if let Err(e) = r {
            // Turned away: the socket is gone, a connection still in the closing
            // socket's backlog was reset, or the controller said it is stopping.
            let fine = matches!(
                e,
                sluice_proto::ClientError::Connect { .. } | sluice_proto::ClientError::Io(_)
            ) || matches!(
                e,
                sluice_proto::ClientError::Status {
                    code: ErrorCode::ShuttingDown,
                    ..
                }
            );
            assert!(fine, "{e:?}");
        }
    }
    let (_s, _w, snap) =
        sluice_store::Store::open(&dir.join("sluice.db"), 1, super::accounting::keys_of_record)
            .unwrap();
    let stored: Vec<u64> = snap.jobs.iter().map(|r| r.id).collect();
    for id in &ids {
        assert!(
            stored.contains(id),
            "job {id} was acknowledged but is not on disk"
        );
    }
}

/// The snapshot the loop published holds what the loop itself builds: every job's
/// record, and the listing of every visible job.
fn snapshot_is_current(s: &Script, now: i64) {
    let listing = s.owner.published().latest();
    let ctl = s.owner.controller();
    let all = sluice_proto::listing::JobQuery::default();
    assert_eq!(listing.jobs(&all, now), ctl.visible_jobs(now), "at {now}");
    // As squeue lists them: the same fields.
    let listed: Vec<sluice_proto::listing::ListedJob> = ctl
        .visible_jobs(now)
        .into_iter()
        .map(sluice_proto::listing::ListedJob::from_record)
        .collect();
    assert_eq!(listing.listed(&all, now), listed, "at {now}");
    // Encoded straight from the jobs: the same bytes.
    assert_eq!(
        String::from_utf8(listing.listed_json(&all, now).unwrap()).unwrap(),
        serde_json::to_string(&listed).unwrap(),
        "at {now}"
    );
    for id in 1..=20 {
        assert_eq!(
            listing.job(JobId(id)),
            ctl.job(JobId(id)),
            "job {id} at {now}"
        );
    }
}

impl Script {
    /// A pass at `now`, with the forecast it asks for made at once.
    fn pass_and_forecast(&mut self, now: i64) {
        let mut out = self.owner.pass(now);
        let forecast = out.offload.take();
        self.settle(out);
        if let Some(work) = forecast {
            self.feed(work(), now);
        }
    }
}

#[test]
fn the_published_snapshot_equals_what_the_loop_builds_after_every_step() {
    // One 4-CPU node. A story of submissions (one with a dependency, one with a begin
    // time, an array), holds, releases, a cancel, a requeue, starts and ends, with a
    // forecast now and then: after each step, the snapshot's records are the loop's.
    let mut s = Script::new(conf(1, 4));
    let mut now = 0;
    let step = |s: &mut Script, now: &mut i64| {
        *now += 5;
        s.pass_and_forecast(*now);
        snapshot_is_current(s, *now);
    };
    let (big, _) = s.submit(desc(4), now);
    snapshot_is_current(&s, now);
    let (waiting, _) = s.submit(desc(2), now);
    snapshot_is_current(&s, now);
    let mut after = desc(1);
    after.dependency = Some(format!("afterok:{big}"));
    let (dependent, _) = s.submit(after, now);
    snapshot_is_current(&s, now);
    let mut later = desc(1);
    later.begin = Some(500);
    // Listed with its sockets per node (squeue -S H).
    later.sockets_per_node = Some(1);
    s.submit(later, now);
    let mut array = desc(1);
    array.array = Some((vec![1, 2, 3, 4], Some(2)));
    let (array, _) = s.submit(array, now);
    snapshot_is_current(&s, now);
    step(&mut s, &mut now);
    let hold = |id, user| Change::Hold {
        id,
        tasks: None,
        user,
    };
    s.change(hold(waiting, false), root(), now).0.unwrap();
    snapshot_is_current(&s, now);
    step(&mut s, &mut now);
    s.change(
        Change::Release {
            id: waiting,
            tasks: None,
        },
        root(),
        now,
    )
    .0
    .unwrap();
    snapshot_is_current(&s, now);
    s.change(
        Change::Hold {
            id: array,
            tasks: Some(vec![2]),
            user: true,
        },
        alice(),
        now,
    )
    .0
    .unwrap();
    snapshot_is_current(&s, now);
    let cancel = CancelRequest {
        jobs: vec![(array.0, Some(3))],
        ..Default::default()
    };
    s.cancel(cancel, alice(), now).0.unwrap();
    step(&mut s, &mut now);
    s.change(
        Change::Requeue {
            id: big,
            tasks: None,
            flags: Default::default(),
        },
        root(),
        now,
    )
    .0
    .unwrap();
    snapshot_is_current(&s, now);
    // Its agent reports the requeued run's end: it may start again.
    let (reply, _rx) = oneshot::channel();
    s.feed(
        Input::Request(Request::AgentEnded {
            report: JobEnded {
                job_id: big.0,
                run: 0,
                node: "node01".into(),
                state: JobState::Cancelled,
                exit_code: 0,
                signal: 15,
                end: now,
                usage: None,
            },
            reply,
        }),
        now,
    );
    snapshot_is_current(&s, now);
    step(&mut s, &mut now);
    // Whatever runs ends, again and again, until the queue is empty (the dependent
    // job starts once `big` completed; the array's held task stays).
    for _ in 0..12 {
        let running: Vec<(JobId, u32)> = s
            .owner
            .controller()
            .visible_jobs(now)
            .iter()
            .filter(|j| j.state == JobState::Running)
            .map(|j| (JobId(j.id), j.restarts))
            .collect();
        for (id, run) in running {
            let (reply, _rx) = oneshot::channel();
            s.feed(
                Input::Request(Request::AgentEnded {
                    report: JobEnded {
                        job_id: id.0,
                        run,
                        node: "node01".into(),
                        state: JobState::Completed,
                        exit_code: 0,
                        signal: 0,
                        end: now,
                        usage: None,
                    },
                    reply,
                }),
                now,
            );
            snapshot_is_current(&s, now);
        }
        step(&mut s, &mut now);
    }
    let ctl = s.owner.controller();
    assert_eq!(ctl.job(dependent).unwrap().state, JobState::Completed);
    assert_eq!(ctl.job(big).unwrap().restarts, 1);
    let left: Vec<String> = ctl
        .visible_jobs(now)
        .into_iter()
        .filter(|j| !j.state.is_finished())
        .map(|j| format!("{} {:?} {}", j.display_id(), j.state, j.reason))
        .collect();
    assert_eq!(
        left,
        [
            "4 Pending BeginTime".to_string(),
            format!("{array}_2 Pending JobHeldUser")
        ]
    );
    // Past MinJobAge the finished jobs are forgotten: gone from the snapshot too.
    let later = now + s.owner.controller().conf.min_job_age + 10;
    s.pass_and_forecast(later);
    snapshot_is_current(&s, later);
    // The begin job and the held task stay, with the array's tasks kept with it.
    assert_eq!(s.owner.published().latest().len(), 4);
}

#[test]
fn listings_filter_where_the_jobs_are_as_squeue_filters_them() {
    // Jobs of alice and of root, an array, a finished job: each filter of a listing
    // gives what filtering every visible job gives.
    use sluice_proto::listing::JobQuery;
    let mut s = Script::new(conf(1, 4));
    let (running, _) = s.submit(desc(4), 0);
    let (pending, _) = s.submit(desc(2), 0);
    let mut array = desc(1);
    array.name = "arr".into();
    array.array = Some((vec![1, 2, 3], None));
    let (array, _) = s.submit(array, 0);
    let (reply, _rx) = oneshot::channel();
    s.feed(
        Input::Request(Request::Submit {
            desc: Box::new(desc(1)),
            caller: root(),
            user: "root".into(),
            group: "root".into(),
            reply,
        }),
        0,
    );
    s.cancel(
        CancelRequest {
            jobs: vec![(pending.0, None)],
            ..Default::default()
        },
        alice(),
        1,
    )
    .0
    .unwrap();
    let listing = s.owner.published().latest();
    let ids = |q: JobQuery| -> Vec<u64> { listing.jobs(&q, 2).iter().map(|j| j.id).collect() };
    let q = |f: fn(&mut JobQuery)| {
        let mut q = JobQuery::default();
        f(&mut q);
        q
    };
    let tasks: Vec<u64> = s
        .owner
        .controller()
        .visible_jobs(2)
        .iter()
        .filter(|j| j.array.is_some_and(|a| a.0 == array.0))
        .map(|j| j.id)
        .collect();
    assert_eq!(tasks.len(), 3);
    assert_eq!(ids(JobQuery::default()).len(), 6, "every visible job");
    assert_eq!(ids(q(|q| q.jobs = Some("1".into()))), [running.0]);
    assert_eq!(
        ids(q(|q| q.jobs = Some("3".into()))),
        tasks,
        "an array: its tasks"
    );
    let second = s
        .owner
        .controller()
        .visible_jobs(2)
        .into_iter()
        .find(|j| j.array == Some((array.0, 2)))
        .unwrap()
        .id;
    assert_eq!(ids(q(|q| q.jobs = Some("3_2".into()))), [second]);
    assert_eq!(
        ids(q(|q| q.jobs = Some("3_9,77,x".into()))),
        Vec::<u64>::new()
    );
    assert_eq!(ids(q(|q| q.users = Some("root".into()))).len(), 1);
    assert_eq!(ids(q(|q| q.users = Some("alice,bob".into()))).len(), 5);
    assert_eq!(ids(q(|q| q.states = Some("RUNNING".into()))), [running.0]);
    assert_eq!(ids(q(|q| q.states = Some("CA".into()))), [pending.0]);
    assert_eq!(
        ids(q(|q| q.states = Some("PENDING,RUNNING".into()))).len(),
        5
    );
    assert_eq!(
        ids(q(|q| q.states = Some(String::new()))),
        Vec::<u64>::new()
    );
    assert_eq!(ids(q(|q| q.names = Some("arr".into()))), tasks);
    assert_eq!(ids(q(|q| q.partitions = Some("debug".into()))).len(), 6);
    assert_eq!(ids(q(|q| q.partitions = Some("other".into()))).len(), 0);
    // Filters together: each narrows.
    let mut both = JobQuery {
        jobs: Some(format!("{},{}", running.0, pending.0)),
        states: Some("PENDING,RUNNING".into()),
        ..Default::default()
    };
    assert_eq!(ids(both.clone()), [running.0]);
    both.users = Some("root".into());
    assert_eq!(ids(both), Vec::<u64>::new());
    // Past MinJobAge the cancelled job is no longer listed, even by id.
    let late = 1 + s.owner.controller().conf.min_job_age;
    let by_id = JobQuery {
        jobs: Some(pending.0.to_string()),
        ..Default::default()
    };
    assert_eq!(listing.jobs(&by_id, late), Vec::new());
    assert_eq!(listing.jobs(&by_id, 2).len(), 1);
}

/// The nodes as the snapshot has them (each node's name, state and CPUs allocated),
/// checked equal to the loop's own, with the partitions.
fn published_nodes(s: &Script) -> Vec<(String, String, u32)> {
    let listing = s.owner.published().latest();
    let nodes: Vec<sluice_proto::types::NodeInfo> =
        listing.node_listing().nodes().cloned().collect();
    assert_eq!(nodes, s.owner.controller().nodes());
    assert_eq!(
        listing.node_listing().partitions(),
        s.owner.controller().partitions().as_slice()
    );
    nodes
        .into_iter()
        .map(|n| (n.name, n.state, n.cpus_alloc))
        .collect()
}

#[test]
fn sinfo_reads_the_nodes_the_loop_published_after_every_step() {
    // Two 4-CPU nodes: their agents register, a job starts on node01, an operator
    // drains node02, the job ends, node02 resumes. After each step the snapshot's
    // nodes are the loop's, as sinfo shows them.
    let mut s = Script::new(conf(2, 4));
    let row = |n: &str, state: &str, cpus: u32| (n.to_string(), state.to_string(), cpus);
    assert_eq!(
        published_nodes(&s),
        [row("node01", "down", 0), row("node02", "down", 0)]
    );
    register(&mut s, "node01", "10.0.0.1", 1);
    register(&mut s, "node02", "10.0.0.2", 1);
    assert_eq!(
        published_nodes(&s),
        [row("node01", "idle", 0), row("node02", "idle", 0)]
    );
    let (job, _) = s.submit(desc(3), 2);
    s.pass(2);
    assert_eq!(
        s.owner.controller().job(job).unwrap().state,
        JobState::Running
    );
    assert_eq!(
        published_nodes(&s),
        [row("node01", "mixed", 3), row("node02", "idle", 0)]
    );
    let drain = Change::UpdateNodes(sluice_proto::types::NodeUpdate {
        nodes: "node02".into(),
        state: "DRAIN".into(),
        reason: Some("fan".into()),
    });
    s.change(drain, root(), 3).0.unwrap();
    assert_eq!(
        published_nodes(&s),
        [row("node01", "mixed", 3), row("node02", "drained", 0)]
    );
    let (reply, _rx) = oneshot::channel();
    s.feed(
        Input::Request(Request::AgentEnded {
            report: JobEnded {
                job_id: job.0,
                run: 0,
                node: "node01".into(),
                state: JobState::Completed,
                exit_code: 0,
                signal: 0,
                end: 4,
                usage: None,
            },
            reply,
        }),
        4,
    );
    assert_eq!(
        published_nodes(&s),
        [row("node01", "idle", 0), row("node02", "drained", 0)]
    );
    let resume = Change::UpdateNodes(sluice_proto::types::NodeUpdate {
        nodes: "node02".into(),
        state: "RESUME".into(),
        reason: None,
    });
    s.change(resume, root(), 5).0.unwrap();
    assert_eq!(
        published_nodes(&s),
        [row("node01", "idle", 0), row("node02", "idle", 0)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_is_answered_while_the_loop_is_busy() {
    // Nothing reads the loop's inputs (a pass or a store write that never ends):
    // listings, job records, nodes and partitions are still answered, from the
    // snapshot; a request that needs the loop waits.
    use axum::extract::{Query, State};
    let mut s = Script::new(conf(1, 4));
    s.submit(desc(4), 0);
    s.submit(desc(4), 0);
    let dir = temp_dir("busy");
    let (store, _writer, _) =
        sluice_store::Store::open(&dir.join("sluice.db"), 1, super::accounting::keys_of_record)
            .unwrap();
    let (inputs, _busy) = unbounded_channel();
    let app = std::sync::Arc::new(super::Shared {
        inputs,
        store,
        listing: s.owner.published(),
        own_uid: 0,
        incarnation: "test".into(),
        key: None,
        in_flight: Default::default(),
        rpc: Default::default(),
        metrics: crate::config::MetricsConf {
            enabled: true,
            ..Default::default()
        },
        tokens: None,
        cluster_name: "test".into(),
        start_conf: None,
    });
    let wait = std::time::Duration::from_secs(5);
    let q = sluice_proto::listing::JobQuery {
        states: Some("PENDING".into()),
        ..Default::default()
    };
    let answer = tokio::time::timeout(
        wait,
        super::routes::list_jobs(
            State(app.clone()),
            axum::extract::connect_info::ConnectInfo(super::Peer { uid: 0, gid: 0 }),
            Query(q),
        ),
    )
    .await
    .expect("answered without the loop");
    let body = axum::body::to_bytes(answer.into_body(), usize::MAX)
        .await
        .unwrap();
    let jobs: Vec<JobRecord> = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        jobs.iter()
            .map(|j| (j.id, j.reason.as_str()))
            .collect::<Vec<_>>(),
        [(2, "Resources")]
    );
    // So is `/metrics/jobs`, from the same snapshot.
    let answer = tokio::time::timeout(wait, super::metrics::jobs(State(app.clone()), None))
        .await
        .expect("answered without the loop");
    assert_eq!(answer.status(), 200);
    let body = axum::body::to_bytes(answer.into_body(), usize::MAX)
        .await
        .unwrap();
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(text.contains("\nslurm_jobs_pending 1\n"), "{text}");
    assert!(text.contains("\nslurm_jobs_running 1\n"), "{text}");
    assert!(text.contains("\nslurm_jobs_cpus_alloc 4\n"), "{text}");
    // So are the nodes and partitions (`sinfo`), from the same snapshot.
    let answer_nodes = |query| {
        let answer = super::routes::nodes(State(app.clone()), query);
        async move {
            let answer = tokio::time::timeout(wait, answer)
                .await
                .expect("answered without the loop");
            axum::body::to_bytes(answer.into_body(), usize::MAX)
                .await
                .unwrap()
        }
    };
    let nodes_answer = |brief: bool| {
        answer_nodes(axum::extract::Query(sluice_proto::listing::NodeQuery {
            brief,
            runs: false,
        }))
    };
    let body = nodes_answer(false).await;
    let nodes: Vec<sluice_proto::types::NodeInfo> = serde_json::from_slice(&body).unwrap();
    assert_eq!(nodes, s.owner.controller().nodes());
    // `sinfo`'s compact form: what it reads of the same nodes.
    let brief: Vec<sluice_proto::listing::ListedNode> =
        serde_json::from_slice(&nodes_answer(true).await).unwrap();
    let listed: Vec<_> = nodes
        .iter()
        .map(sluice_proto::listing::ListedNode::of)
        .collect();
    assert_eq!(brief, listed);
    // And in runs of alike nodes, which give the same nodes back.
    let runs: Vec<sluice_proto::listing::ListedRun> = serde_json::from_slice(
        &answer_nodes(axum::extract::Query(sluice_proto::listing::NodeQuery {
            brief: false,
            runs: true,
        }))
        .await,
    )
    .unwrap();
    assert!(!runs.is_empty() && runs.len() <= listed.len(), "{runs:?}");
    let from_runs: Vec<_> = runs
        .iter()
        .flat_map(|r| {
            sluice_conf::hostlist::expand(&r.names)
                .unwrap()
                .into_iter()
                .map(|name| sluice_proto::listing::ListedNode {
                    name,
                    ..r.node.clone()
                })
        })
        .collect();
    assert_eq!(from_runs, listed);
    assert_eq!(
        nodes
            .iter()
            .map(|n| (n.name.as_str(), n.cpus_alloc))
            .collect::<Vec<_>>(),
        [("node01", 4)]
    );
    let answer = tokio::time::timeout(wait, super::routes::partitions(State(app.clone())))
        .await
        .expect("answered without the loop");
    let body = axum::body::to_bytes(answer.into_body(), usize::MAX)
        .await
        .unwrap();
    let parts: Vec<sluice_proto::types::PartitionInfo> = serde_json::from_slice(&body).unwrap();
    assert_eq!(parts, s.owner.controller().partitions());
    // A change needs the loop: it waits.
    let hold = Change::Hold {
        id: JobId(2),
        tasks: None,
        user: false,
    };
    let changed = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        super::routes::change(app, super::Peer { uid: 0, gid: 0 }, hold),
    )
    .await;
    assert!(changed.is_err(), "the loop is busy");
}

#[tokio::test]
async fn who_may_read_the_metrics_is_slurmctld_s_rule() {
    use crate::config::MetricsConf;
    use axum::extract::connect_info::ConnectInfo;
    use axum::extract::State;
    use axum::Extension;
    let s = Script::new(conf(1, 4));
    let dir = temp_dir("metrics-auth");
    let (store, _writer, _) =
        sluice_store::Store::open(&dir.join("sluice.db"), 1, super::accounting::keys_of_record)
            .unwrap();
    // A user with a name that is neither root nor the controller's (nobody, where the
    // system has one).
    let user = 65534;
    let user_name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(user))
        .ok()
        .flatten()
        .map(|u| u.name);
    let app = |metrics: MetricsConf, own_uid: u32| {
        std::sync::Arc::new(super::Shared {
            inputs: unbounded_channel().0,
            store: store.clone(),
            listing: s.owner.published(),
            own_uid,
            incarnation: "test".into(),
            key: None,
            in_flight: Default::default(),
            rpc: Default::default(),
            metrics,
            tokens: None,
            cluster_name: "test".into(),
            start_conf: None,
        })
    };
    let status = |app: super::App, uid: Option<u32>| async move {
        let who = uid.map(|uid| Extension(ConnectInfo(super::Peer { uid, gid: uid })));
        super::metrics::jobs(State(app), who)
            .await
            .status()
            .as_u16()
    };
    let parse = |users: Option<&str>, params: Option<&str>, private: bool| {
        MetricsConf::parse(Some("metrics/openmetrics"), users, params, private)
            .unwrap()
            .0
    };
    // Off without MetricsType.
    assert_eq!(status(app(MetricsConf::default(), 4242), None).await, 404);
    // Open: anyone, without saying who.
    let open = parse(None, None, false);
    assert_eq!(status(app(open.clone(), 4242), None).await, 200);
    assert_eq!(status(app(open, 4242), Some(31337)).await, 200);
    // PrivateData: root and the controller's user only, and only saying who.
    let private = parse(None, None, true);
    assert!(private.auth);
    assert_eq!(status(app(private.clone(), 4242), None).await, 401);
    assert_eq!(status(app(private.clone(), 4242), Some(0)).await, 200);
    assert_eq!(status(app(private.clone(), 4242), Some(4242)).await, 200);
    assert_eq!(status(app(private, 4242), Some(31337)).await, 403);
    // ...unless MetricsParameters=ignore_private_data.
    let ignored = parse(None, Some("ignore_private_data"), true);
    assert_eq!(status(app(ignored, 4242), None).await, 200);
    // MetricsAuthUsers: those users too (by name), whatever PrivateData says; and
    // ignore_private_data does not open them to the world.
    if let Some(name) = user_name {
        let listed = parse(
            Some(&format!("nobody-here,{name}")),
            Some("ignore_private_data"),
            false,
        );
        assert_eq!(status(app(listed.clone(), 4242), None).await, 401);
        assert_eq!(status(app(listed.clone(), 4242), Some(user)).await, 200);
        assert_eq!(status(app(listed.clone(), 4242), Some(0)).await, 200);
        assert_eq!(status(app(listed, 4242), Some(31337)).await, 403);
    }
    let others = parse(Some("nobody-here"), None, false);
    let refused = super::metrics::jobs(
        State(app(others, 4242)),
        Some(Extension(ConnectInfo(super::Peer {
            uid: 31337,
            gid: 31337,
        }))),
    )
    .await;
    assert_eq!(refused.status(), 403);
    let body = axum::body::to_bytes(refused.into_body(), usize::MAX)
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&body),
        "slurmctld HTTP server request for 'GET /metrics/jobs':\nFailed: Operation not permitted\n"
    );
}
