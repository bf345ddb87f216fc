//! What `sluice explain JOBID` reads (`GET /v1/jobs/{id}/explain`): why a job waits,
//! when it is expected to start, what would start it sooner; or, for a job that ran,
//! when, where and by which pass it started and what preempted it.
//!
//! The controller writes every sentence (it knows the names: nodes, users, QOS); the
//! command prints them, or the whole document with `--json`. Times are Unix seconds.

use serde::{Deserialize, Serialize};

/// `GET /v1/jobs/{id}/explain`'s query: an array task, and whether to search for
/// suggestions (default: yes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainQuery {
    /// The array task, when one is named (`123_4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<u32>,
    /// Search for suggestions (`false`: the answer without them, at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggest: Option<bool>,
}

/// The whole explanation of one job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// Job id (an array task: its own id).
    pub job_id: u64,
    /// How `squeue` names it (`123`, `123_4`).
    pub display_id: String,
    /// Job state as `squeue -o %T` prints it.
    pub state: String,
    /// The reason `squeue -o %r` prints (pending jobs), `None` otherwise.
    pub reason: String,
    /// When the explanation was computed.
    pub now: i64,
    /// Everything that holds a pending job back, the one `squeue` names first.
    pub causes: Vec<Cause>,
    /// Its resources: can they ever be had, and how each node stands now.
    pub resources: Option<Resources>,
    /// Its priority and place in its partition's queue (pending jobs).
    pub priority: Option<Priority>,
    /// When and where it is expected to start, if it is.
    pub expected: Option<Expected>,
    /// Why no start is expected, when none is.
    pub no_start: Option<String>,
    /// What would start it sooner, each with its own expected start; only changes that
    /// really help.
    pub suggestions: Vec<Suggestion>,
    /// How the search for `suggestions` went.
    #[serde(default)]
    pub suggestion_search: SuggestionSearch,
    /// When no start is expected because the simulation ran out of passes (`no_start`),
    /// the time it reached: the job starts no earlier (a lower bound). The suggestions'
    /// simulations looked no further either, so "none helps" means none starts it by
    /// then.
    #[serde(default)]
    pub not_before: Option<i64>,
    /// For a job that started: the story of its runs (start, pass, nodes, preemption).
    pub history: Vec<String>,
}

/// How the search for suggestions went (`GET .../explain?suggest=false` skips it: the
/// rest of the explanation comes at once, from the controller's forecast).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuggestionSearch {
    /// Nothing to search: the job is not pending in the scheduler's queue, or it starts
    /// now.
    #[default]
    None,
    /// Not asked for.
    Skipped,
    /// Every change was simulated to the end: the suggestions are all that help.
    Complete,
    /// The search ran out of its pass budget before every change was simulated to the
    /// end: a change not listed may still help.
    Cut,
}

/// One thing that holds a pending job back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// The family: `dependency`, `hold`, `begin`, `partition`, `limit`, `reservation`,
    /// `resources`, `priority` or `hetjob` (the component a heterogeneous job waits
    /// for).
    pub family: String,
    /// Slurm's reason code for it (`Dependency`, `QOSMaxGRESPerUser`, ...).
    pub reason: String,
    /// One sentence with the numbers.
    pub text: String,
}

/// Whether the request can ever be met, and how each node stands for it now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// `Some(sentence)` when no node of its partition could ever hold it
    /// ("no node has 16 GPUs; the largest has 8").
    pub never: Option<String>,
    /// Nodes grouped by how they stand for it, as hostlists with one sentence each.
    pub nodes: Vec<NodeLine>,
}

/// Nodes in the same situation for the job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeLine {
    /// The nodes, as a hostlist (`node[02-03]`).
    pub nodes: String,
    /// Their situation ("4 of 8 GPUs free, needs 8"; "DRAIN, reason 'ECC errors'").
    pub text: String,
    /// Whether the job could start on them now.
    pub fits: bool,
}

/// A pending job's priority and place.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Priority {
    /// Its priority (what `squeue -o %Q` shows).
    pub value: u32,
    /// Its weighted factors as `sprio -l` names them (`AGE`, `FAIRSHARE`, ...), when
    /// priority is multifactor.
    pub factors: Vec<(String, f64)>,
    /// Its place among the pending jobs of its partition (1 is first).
    pub rank: u32,
    /// Pending jobs of its partition.
    pub of: u32,
    /// Jobs ahead of it that compete with it now, and what they ask for together.
    pub ahead: u32,
    /// Jobs ahead of it that wait on something of their own (a limit, a begin time):
    /// the scheduler passes over them, so they do not keep it waiting now.
    #[serde(default)]
    pub waiting_ahead: u32,
    /// Processors the jobs ahead ask for.
    pub ahead_cpus: u64,
    /// GPUs the jobs ahead ask for.
    pub ahead_gpus: u64,
    /// Nodes the jobs ahead ask for.
    pub ahead_nodes: u64,
}

/// An expected start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    /// When, Unix seconds: the controller's forecast (or, while the forecast is being
    /// remade, the job simulated on its own), what `squeue --start` shows once the
    /// forecast is current.
    pub start: i64,
    /// On which nodes, as a hostlist.
    pub nodes: String,
    /// Which pass would start it (`main`, `backfill`, `reservation`, `preempt`).
    pub pass: String,
    /// The running jobs whose ends it waits for.
    pub waits_for: Vec<Awaited>,
    /// Whether `squeue --start` shows something else than `start`: `planned`. It
    /// differs only while the forecast is being remade, or when the forecast does not
    /// start the job.
    pub plan_differs: bool,
    /// What `squeue --start` shows, Unix seconds (`None`: `N/A`): the start in the
    /// controller's last forecast of every pending job (made after each change, in the
    /// background), or, for a job that forecast does not start, the start the last
    /// backfill pass planned (what Slurm's `squeue --start` shows). The audit trail's
    /// `planned` events record only the backfill pass's plan.
    pub planned: Option<i64>,
}

/// A running job whose end an expected start waits for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Awaited {
    /// Its id, or `None` when `PrivateData=jobs` hides another user's job.
    pub job_id: Option<u64>,
    /// Its owner, or `None` when hidden.
    pub user: Option<String>,
    /// When its time limit ends.
    pub end: i64,
}

/// A change that would start the job sooner.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    /// The change as options (`--time=90`, `--gpus-per-node=4`, `-p short`, ...).
    pub option: String,
    /// In words.
    pub text: String,
    /// Its expected start.
    pub start: i64,
    /// Its expected nodes, as a hostlist.
    pub nodes: String,
}
