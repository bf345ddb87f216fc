//! Advance reservations in a replay (`sluice sim --reservations FILE`): the same core
//! code as the live controller's `scontrol create reservation`, on virtual time.
//!
//! # File format
//!
//! One reservation per line, whitespace-separated; `#` starts a comment:
//!
//! ```text
//! # name   start  duration  size     who             flags
//! maint    3600   7200      nodes=4  users=0         MAINT
//! gpus     0      14400     gpus=8   users=101,102   DAILY,FLEX
//! physics  600    3600      nodes=2  accounts=phys   -
//! ```
//!
//! - `start`: seconds after the trace's first submission; `duration`: seconds.
//! - `size`: `nodes=N` (the core picks N free nodes) or `gpus=N` (N GPUs on nodes it
//!   picks; the rest of those nodes stays public).
//! - `who`: `users=UID,...`, `users=-UID,...` (all but), or `accounts=NAME,...` (the
//!   accounts of `--accounts`/`--fairshare`).
//! - `flags`: Slurm's `MAINT`, `FLEX`, `IGNORE_JOBS`, `DAILY`, `WEEKLY`, `PURGE_COMP`,
//!   comma-separated, or `-`.
//!
//! Reservations are made in file order when the replay reaches their start (or at the
//! first event if they start before it), over whatever is running then; one that cannot
//! be made (busy nodes without `IGNORE_JOBS`) is reported as refused.
//!
//! # Which jobs use a reservation
//!
//! Traces do not name reservations: a job is submitted to the first reservation (in
//! file order) that admits its user (or account) and whose current window ends after
//! the job could finish in it (`FLEX`: any time before its end). Other jobs never run
//! into a reservation.

use std::collections::BTreeMap;
use std::path::Path;

use sluice_core::{AccessList, ReservationRequest, ResvFlags, ResvUsage, Secs, Time};

use crate::error::SimError;

/// One line of a reservations file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResvLine {
    /// Name.
    pub name: String,
    /// Start, seconds after the first submission.
    pub start: Secs,
    /// Duration, seconds.
    pub duration: Secs,
    /// `nodes=N`.
    pub nodes: Option<u32>,
    /// `gpus=N`.
    pub gpus: Option<u32>,
    /// `users=`.
    pub users: AccessList<u32>,
    /// `accounts=`.
    pub accounts: AccessList<String>,
    /// Flags.
    pub flags: ResvFlags,
}

impl ResvLine {
    /// The core's request, with the window placed at `origin + start`.
    pub fn request(&self, origin: Time) -> ReservationRequest {
        ReservationRequest {
            name: self.name.clone(),
            start: origin + self.start,
            end: origin + self.start + self.duration,
            node_count: self.nodes,
            gpus: self.gpus,
            users: self.users.clone(),
            accounts: self.accounts.clone(),
            flags: self.flags,
            ..Default::default()
        }
    }
}

fn list<T>(v: &str, parse: impl Fn(&str) -> Option<T>) -> Option<AccessList<T>> {
    let negated = v.starts_with('-');
    let names: Option<Vec<T>> = v
        .split(',')
        .map(|x| parse(x.trim_start_matches('-')))
        .collect();
    Some(AccessList {
        names: names?,
        negated,
    })
}

/// Parses a reservations file's text (see the module documentation).
///
/// Errors: a malformed line, with its number and what is wrong.
pub fn parse(text: &str, path: &Path) -> Result<Vec<ResvLine>, SimError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |message: String| SimError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        let f: Vec<&str> = line.split_whitespace().collect();
        let [name, start, duration, size, who, flags] = f[..] else {
            return Err(err(format!(
                "expected 6 fields (name start duration size who flags), found {}",
                f.len()
            )));
        };
        let num = |s: &str, what: &str| -> Result<i64, SimError> {
            s.parse::<i64>()
                .ok()
                .filter(|v| *v >= 0)
                .ok_or_else(|| err(format!("bad {what} '{s}'")))
        };
        let start = num(start, "start")?;
        let duration = num(duration, "duration")?;
        if duration == 0 {
            return Err(err("duration must be at least one second".into()));
        }
        let (nodes, gpus) = match size.split_once('=') {
            Some(("nodes", n)) => (Some(num(n, "node count")? as u32), None),
            Some(("gpus", n)) => (None, Some(num(n, "GPU count")? as u32)),
            _ => return Err(err(format!("bad size '{size}' (nodes=N or gpus=N)"))),
        };
        let (mut users, mut accounts) = (AccessList::default(), AccessList::default());
        match who.split_once('=') {
            Some(("users", v)) => {
                users =
                    list(v, |x| x.parse().ok()).ok_or_else(|| err(format!("bad users '{v}'")))?
            }
            Some(("accounts", v)) => accounts = list(v, |x| Some(x.to_string())).expect("any"),
            _ => return Err(err(format!("bad who '{who}' (users=... or accounts=...)"))),
        }
        let mut fl = ResvFlags::default();
        if flags != "-" {
            for flag in flags.split(',') {
                match flag.to_ascii_uppercase().as_str() {
                    "MAINT" => fl.maint = true,
                    "FLEX" => fl.flex = true,
                    "IGNORE_JOBS" => fl.ignore_jobs = true,
                    "DAILY" => fl.daily = true,
                    "WEEKLY" => fl.weekly = true,
                    "PURGE_COMP" => fl.purge_comp = Some(300),
                    _ => return Err(err(format!("unknown flag '{flag}'"))),
                }
            }
        }
        out.push(ResvLine {
            name: name.to_string(),
            start,
            duration,
            nodes,
            gpus,
            users,
            accounts,
            flags: fl,
        });
    }
    Ok(out)
}

/// Reads and parses a reservations file.
///
/// Errors: the file cannot be read, or a line is malformed.
pub fn read(path: &Path) -> Result<Vec<ResvLine>, SimError> {
    let text = std::fs::read_to_string(path).map_err(|source| SimError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

/// What a reservation set aside and what its jobs used, over the whole replay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResvReport {
    /// Name.
    pub name: String,
    /// Node-seconds reserved (whole-node reservations).
    pub reserved_node_s: u64,
    /// Node-seconds its jobs used.
    pub used_node_s: u64,
    /// GPU-seconds reserved.
    pub reserved_gpu_s: u64,
    /// GPU-seconds its jobs used.
    pub used_gpu_s: u64,
    /// Jobs submitted to it.
    pub jobs: u64,
    /// Why the core refused to make it, if it did.
    pub refused: Option<String>,
}

impl ResvReport {
    /// Fills in usage figures from the core.
    pub fn set_usage(&mut self, u: &ResvUsage) {
        self.reserved_node_s = u.reserved_node_s;
        self.used_node_s = u.used_node_s;
        self.reserved_gpu_s = u.reserved_gpu_s;
        self.used_gpu_s = u.used_gpu_s;
    }

    /// Node-seconds reserved and not used.
    pub fn idle_node_s(&self) -> u64 {
        self.reserved_node_s.saturating_sub(self.used_node_s)
    }

    /// GPU-seconds reserved and not used.
    pub fn idle_gpu_s(&self) -> u64 {
        self.reserved_gpu_s.saturating_sub(self.used_gpu_s)
    }
}

/// The replay's reservations: the lines still to be made, and the reports.
#[derive(Clone, Debug, Default)]
pub struct ResvSim {
    /// Lines not yet made, in file order.
    pub todo: Vec<ResvLine>,
    /// Start of the trace (the first submission).
    pub origin: Time,
    /// Reports, by name.
    pub reports: BTreeMap<String, ResvReport>,
    /// Accounts of users (for `accounts=`), from the fair-share map.
    pub accounts: BTreeMap<u32, String>,
}
