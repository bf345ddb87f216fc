//! Advance reservations in the controller: `scontrol create|update|delete
//! reservation` (operators only), their records (durable before a change is
//! acknowledged, restored after a restart), submissions with `--reservation`, and the
//! core's own changes (ends, repeats, purges) written back.
//!
//! The scheduling itself is the core's ([`sluice_core::reservation`]); this module
//! turns names into ids and back, and keeps what only Slurm's output needs (user names,
//! the reservation id of generated names, `SPEC_NODES`).

use sluice_proto::error::{ApiError, ErrorCode};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use sluice_conf::duration::format_time;
use sluice_core::reservation::gpu_share;
use sluice_core::{AccessList, JobId, Reservation, ReservationRequest, ResvError, ResvEvent};
use sluice_proto::reservations::{
    ListChange, ListOp, ReservationChange, ReservationOp, ReservationRecord, ReservationUsage,
};

use super::*;

/// Slurm's message when a non-operator asks to change reservations.
pub const NOT_OPERATOR: &str = "Invalid user id";

/// Slurm's refusal of a reservation naming an account that does not exist.
pub const BAD_RESV_ACCOUNT: &str = "Invalid account or account/partition combination specified";

/// A reservation idle this long (seconds, its window open and none of its jobs
/// running) is reported once in the controller's log.
pub const IDLE_NOTE_AFTER: i64 = 1800;

/// The controller's reservation records, by name.
#[derive(Clone, Debug, Default)]
pub struct ResvRecords {
    records: BTreeMap<String, ReservationRecord>,
    /// The id the next reservation gets (Slurm counts from 1).
    next_id: u32,
    /// Reservations already reported idle in their current idle spell.
    noted_idle: BTreeSet<String>,
}

/// Flags Sluice implements, in the order Slurm prints them.
const FLAG_ORDER: &[&str] = &[
    "MAINT",
    "FLEX",
    "IGNORE_JOBS",
    "DAILY",
    "WEEKLY",
    "SPEC_NODES",
    "PURGE_COMP",
];

/// Slurm's default `PURGE_COMP` delay (seconds).
const PURGE_DEFAULT: i64 = 300;

fn resv_error(e: ResvError) -> String {
    e.to_string()
}

/// The flags of a record as Slurm prints them (`FLEX,DAILY,SPEC_NODES`,
/// `PURGE_COMP=00:05:00`), or `(null)`.
pub fn flags_string(r: &ReservationRecord) -> String {
    let mut out = Vec::new();
    for f in FLAG_ORDER {
        if r.has_flag(f) {
            if *f == "PURGE_COMP" {
                let d = r.purge_after.unwrap_or(PURGE_DEFAULT);
                out.push(format!("PURGE_COMP={}", format_time(Some(d))));
            } else {
                out.push(f.to_string());
            }
        }
    }
    out.join(",")
}

/// Applies a list change to `list`.
fn apply_list(list: &mut Vec<String>, change: &ListChange) {
    match change.op {
        ListOp::Set => *list = change.items.clone(),
        ListOp::Add => {
            for i in &change.items {
                if !list.contains(i) {
                    list.push(i.clone());
                }
            }
        }
        ListOp::Remove => list.retain(|x| !change.items.contains(x)),
    }
}

/// Flag names as given (upper-cased), checked; `PURGE_COMP=time` gives the delay.
fn parse_flags(items: &[String]) -> Result<(Vec<String>, Option<i64>), String> {
    let mut flags = Vec::new();
    let mut purge = None;
    for i in items {
        let up = i.to_ascii_uppercase();
        let (name, value) = match up.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (up.clone(), None),
        };
        let name = match name.as_str() {
            "MAINT" | "FLEX" | "IGNORE_JOBS" | "DAILY" | "WEEKLY" | "SPEC_NODES" => name,
            "PURGE_COMP" => {
                if let Some(v) = value {
                    let secs = sluice_conf::duration::parse_time(&v)
                        .ok()
                        .flatten()
                        .ok_or_else(|| format!("Error parsing flags {i}"))?;
                    purge = Some(secs);
                }
                name
            }
            _ => return Err(format!("Error parsing flags {i}")),
        };
        if !flags.contains(&name) {
            flags.push(name);
        }
    }
    Ok((flags, purge))
}

impl Controller {
    /// The reservation records (with their state and usage as of `now`), by name.
    pub fn reservation_records(&self, now: i64) -> Vec<ReservationRecord> {
        self.resv_records
            .records
            .values()
            .map(|r| self.listed(r, now))
            .collect()
    }

    fn listed(&self, r: &ReservationRecord, now: i64) -> ReservationRecord {
        let mut out = r.clone();
        if let Some(core) = self.sched.reservation(&r.name) {
            out.start = core.start;
            out.end = core.end;
            let u = &core.usage;
            out.usage = ReservationUsage {
                reserved_node_s: u.reserved_node_s,
                used_node_s: u.used_node_s,
                reserved_gpu_s: u.reserved_gpu_s,
                used_gpu_s: u.used_gpu_s,
                idle_since: u.idle_since,
            };
        }
        out.cores = if r.gpus_per_node.is_empty() {
            r.nodes
                .iter()
                .filter_map(|n| self.conf.node_id(n))
                .map(|n| self.conf.cluster.node(n).capacity.cpus)
                .sum()
        } else {
            0
        };
        out.state = if out.start <= now && now < out.end {
            "ACTIVE".into()
        } else {
            "INACTIVE".into()
        };
        out
    }

    /// The core's reservation for a record.
    fn core_reservation(&self, r: &ReservationRecord) -> Reservation {
        let held = r
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let nid = self.conf.node_id(n)?;
                let res = match r.gpus_per_node.get(i) {
                    Some(&k) => gpu_share(&self.conf.cluster, nid, k),
                    None => self.conf.cluster.node(nid).capacity,
                };
                Some((nid, res))
            })
            .collect();
        let mut flags = sluice_core::ResvFlags {
            maint: r.has_flag("MAINT"),
            ignore_jobs: r.has_flag("IGNORE_JOBS"),
            flex: r.has_flag("FLEX"),
            daily: r.has_flag("DAILY"),
            weekly: r.has_flag("WEEKLY"),
            purge_comp: None,
        };
        if r.has_flag("PURGE_COMP") {
            flags.purge_comp = Some(r.purge_after.unwrap_or(PURGE_DEFAULT));
        }
        Reservation {
            name: r.name.clone(),
            start: r.start,
            end: r.end,
            held,
            gpus: r.gpus,
            partition: r.partition.as_deref().and_then(|p| self.partition_of(p)),
            users: AccessList {
                names: r.user_ids.clone(),
                negated: r.users.first().is_some_and(|u| u.starts_with('-')),
            },
            accounts: AccessList {
                names: r
                    .accounts
                    .iter()
                    .map(|a| a.trim_start_matches('-').to_string())
                    .collect(),
                negated: r.accounts.first().is_some_and(|a| a.starts_with('-')),
            },
            flags,
            usage: Default::default(),
            had_jobs: r.had_jobs,
            done_since: None,
        }
    }

    /// Takes back the reservations of the store's rows (name, serialised record) after
    /// a restart, and the running jobs' places in them. Rows that do not parse are
    /// skipped.
    pub fn restore_reservations(&mut self, rows: &[(String, String)], now: i64) {
        for (_, record) in rows {
            let Ok(r) = serde_json::from_str::<ReservationRecord>(record) else {
                continue;
            };
            self.resv_records.next_id = self.resv_records.next_id.max(r.id + 1);
            let core = self.core_reservation(&r);
            self.sched.add_reservation(core, now);
            self.resv_records.records.insert(r.name.clone(), r);
        }
        let bound: Vec<(JobId, String)> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running)
            .filter_map(|j| Some((j.id, j.desc.reservation.clone()?)))
            .collect();
        for (id, name) in bound {
            self.sched.set_job_reservation(id, &name, now);
        }
    }

    /// Whether `user` (uid) with `account` may submit to reservation `name`. Errors
    /// (Slurm's): "Requested reservation is invalid", "Access denied to requested
    /// reservation".
    pub fn check_reservation(
        &self,
        name: &str,
        uid: u32,
        account: Option<&str>,
    ) -> Result<(), String> {
        self.sched
            .check_reservation(name, uid, account)
            .map_err(resv_error)
    }

    /// Binds a job just queued in the core to its `--reservation`.
    pub(crate) fn bind_reservation(&mut self, id: JobId, now: i64) {
        if let Some(name) = self.jobs.get(&id).and_then(|j| j.desc.reservation.clone()) {
            self.sched.set_job_reservation(id, &name, now);
        }
    }

    /// `scontrol create|update|delete reservation` on behalf of `caller`; `uids` maps
    /// the user names the request names to uids (looked up by the server). Returns the
    /// reservation's name and the record writes to make durable before answering.
    ///
    /// Errors (Slurm's): "Invalid user id" (not an operator, or an unknown user),
    /// "Requested reservation is invalid", "Duplicate reservation name", "Invalid node
    /// name specified", "Invalid partition name specified", "Requested nodes are busy",
    /// "Requested reservation overlaps with another reservation", "Requested
    /// reservation is in use"; nothing changes then.
    pub fn change_reservation(
        &mut self,
        req: &ReservationChange,
        uids: &BTreeMap<String, u32>,
        caller: &Caller,
        now: i64,
    ) -> Result<(String, Vec<Effect>), ApiError> {
        if !caller.admin {
            return Err(ApiError::new(ErrorCode::AccessDenied, NOT_OPERATOR));
        }
        self.change_reservation_as_operator(req, uids, now)
            .map_err(ApiError::invalid)
    }

    fn change_reservation_as_operator(
        &mut self,
        req: &ReservationChange,
        uids: &BTreeMap<String, u32>,
        now: i64,
    ) -> Result<(String, Vec<Effect>), String> {
        match req.op.unwrap_or(ReservationOp::Create) {
            ReservationOp::Delete => {
                let name = req.name.clone().unwrap_or_default();
                self.sched
                    .delete_reservation(&name, now)
                    .map_err(resv_error)?;
                self.resv_records.records.remove(&name);
                self.resv_records.noted_idle.remove(&name);
                let mut effects = vec![Effect::PersistReservation {
                    name: name.clone(),
                    record: None,
                }];
                effects.extend(self.hold_reservation_jobs(&name, now));
                Ok((name, effects))
            }
            ReservationOp::Create => {
                let mut rec = ReservationRecord {
                    id: self.resv_records.next_id.max(1),
                    ..Default::default()
                };
                self.apply_change(&mut rec, req, uids)?;
                if rec.name.is_empty() {
                    let who = rec
                        .users
                        .first()
                        .or(rec.accounts.first())
                        .map(|s| s.trim_start_matches('-').to_string())
                        .unwrap_or_default();
                    rec.name = format!("{who}_{}", rec.id);
                }
                let core_req = self.core_request(&rec, req.node_count, req.nodes.is_some());
                let planned = self
                    .sched
                    .plan_reservation(&core_req, now)
                    .map_err(resv_error)?;
                self.fill_from_core(&mut rec, &planned);
                self.resv_records.next_id = rec.id + 1;
                self.sched.add_reservation(planned, now);
                Ok(self.store_record(rec))
            }
            ReservationOp::Update => {
                let name = req.name.clone().unwrap_or_default();
                let old = self
                    .resv_records
                    .records
                    .get(&name)
                    .cloned()
                    .ok_or_else(|| resv_error(ResvError::NotFound))?;
                let mut rec = old.clone();
                if let Some(core) = self.sched.reservation(&name) {
                    (rec.start, rec.end) = (core.start, core.end);
                }
                let keep_duration = rec.end - rec.start;
                self.apply_change(&mut rec, req, uids)?;
                if req.start.is_some() && req.end.is_none() && req.duration.is_none() {
                    rec.end = rec.start + keep_duration;
                }
                let renode = req.nodes.is_some() || req.node_count.is_some() || req.gpus.is_some();
                let mut core_req = self.core_request(&rec, req.node_count, true);
                if !renode {
                    // Same nodes: keep them (a NodeCnt choice is not made again).
                    core_req.node_count = None;
                }
                let mut planned = self
                    .sched
                    .plan_update(&name, &core_req, now)
                    .map_err(resv_error)?;
                if let Some(core) = self.sched.reservation(&name) {
                    planned.usage = core.usage.clone();
                }
                self.fill_from_core(&mut rec, &planned);
                self.sched.add_reservation(planned, now);
                Ok(self.store_record(rec))
            }
        }
    }

    /// The pending jobs of a deleted reservation: held, as Slurm holds them (reason
    /// `ReservationDeleted`, released with `scontrol release`), no longer bound to it.
    fn hold_reservation_jobs(&mut self, name: &str, now: i64) -> Vec<Effect> {
        let stranded: Vec<JobId> = self
            .jobs
            .values()
            .filter(|r| r.state == JobState::Pending && r.desc.reservation.as_deref() == Some(name))
            .map(|r| r.id)
            .collect();
        let mut effects = Vec::new();
        for id in stranded {
            if self.outside.insert(id) {
                self.sched.cancel_pending(id, now);
            }
            let r = self.jobs.get_mut(&id).expect("listed");
            r.hold = Some(Hold::ReservationDeleted(name.to_string()));
            Arc::make_mut(&mut r.desc).reservation = None;
            r.accrue_time = None;
            r.reason = Reason::ReservationDeleted;
            effects.push(self.persist(id));
        }
        effects
    }

    fn store_record(&mut self, rec: ReservationRecord) -> (String, Vec<Effect>) {
        let name = rec.name.clone();
        let json = serde_json::to_string(&rec).expect("records serialise");
        self.resv_records.records.insert(name.clone(), rec);
        (
            name.clone(),
            vec![Effect::PersistReservation {
                name,
                record: Some(json),
            }],
        )
    }

    /// Applies the request's fields to a record (names resolved, not yet checked
    /// against the machine).
    fn apply_change(
        &self,
        rec: &mut ReservationRecord,
        req: &ReservationChange,
        uids: &BTreeMap<String, u32>,
    ) -> Result<(), String> {
        if let Some(n) = &req.name {
            rec.name = n.clone();
        }
        if let Some(s) = req.start {
            rec.start = s;
        }
        if let Some(e) = req.end {
            rec.end = e;
        }
        if let Some(d) = req.duration {
            rec.end = rec.start + d;
        }
        if let Some(nodes) = &req.nodes {
            let names = if nodes.eq_ignore_ascii_case("ALL") {
                self.conf
                    .cluster
                    .nodes
                    .iter()
                    .map(|n| n.name.clone())
                    .collect()
            } else {
                sluice_conf::hostlist::expand(nodes)
                    .map_err(|_| "Invalid node name specified".to_string())?
            };
            if names.iter().any(|n| self.conf.node_id(n).is_none()) {
                return Err("Invalid node name specified".into());
            }
            rec.nodes = names;
            rec.gpus_per_node.clear();
            if !rec.flags.iter().any(|f| f == "SPEC_NODES") {
                rec.flags.push("SPEC_NODES".into());
            }
        }
        if req.node_count.is_some() && req.nodes.is_none() {
            rec.nodes.clear();
            rec.flags.retain(|f| f != "SPEC_NODES");
        }
        if let Some(g) = req.gpus {
            rec.gpus = Some(g);
        }
        if let Some(p) = &req.partition {
            if self.partition_of(p).is_none() {
                return Err(BAD_PARTITION.into());
            }
            rec.partition = Some(p.clone());
        }
        if let Some(u) = &req.users {
            apply_list(&mut rec.users, u);
            rec.user_ids = rec
                .users
                .iter()
                .map(|n| {
                    uids.get(n.trim_start_matches('-'))
                        .copied()
                        .ok_or_else(|| NOT_OPERATOR.to_string())
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(a) = &req.accounts {
            // As Slurm: only accounts that exist.
            if a.items.iter().any(|n| {
                self.accounts
                    .account_association(n.trim_start_matches('-'))
                    .is_none()
            }) {
                return Err(BAD_RESV_ACCOUNT.into());
            }
            apply_list(&mut rec.accounts, a);
        }
        if let Some(f) = &req.flags {
            let (items, purge) = parse_flags(&f.items)?;
            let spec = rec.has_flag("SPEC_NODES");
            // As in Slurm, `Flags=` on an update adds to the flags (`Flags-=` removes).
            let op = match (f.op, rec.name.is_empty() || rec.flags.is_empty()) {
                (ListOp::Set, false) if req.op == Some(ReservationOp::Update) => ListOp::Add,
                (op, _) => op,
            };
            let change = ListChange { op, items };
            apply_list(&mut rec.flags, &change);
            if spec && !rec.has_flag("SPEC_NODES") {
                rec.flags.push("SPEC_NODES".into());
            }
            if purge.is_some() {
                rec.purge_after = purge;
            }
        }
        Ok(())
    }

    /// The core's request for a record.
    fn core_request(
        &self,
        rec: &ReservationRecord,
        node_count: Option<u32>,
        named: bool,
    ) -> ReservationRequest {
        let core = self.core_reservation(rec);
        ReservationRequest {
            name: rec.name.clone(),
            start: rec.start,
            end: rec.end,
            nodes: if named || node_count.is_none() {
                rec.nodes
                    .iter()
                    .filter_map(|n| self.conf.node_id(n))
                    .collect()
            } else {
                Vec::new()
            },
            node_count: node_count.or(if rec.nodes.is_empty() {
                None
            } else {
                Some(rec.nodes.len() as u32)
            }),
            gpus: rec.gpus,
            partition: core.partition,
            users: core.users,
            accounts: core.accounts,
            flags: core.flags,
        }
    }

    /// Copies what the core chose (nodes, GPUs per node) into a record.
    fn fill_from_core(&self, rec: &mut ReservationRecord, core: &Reservation) {
        rec.nodes = core
            .held
            .iter()
            .map(|(n, _)| self.conf.cluster.node(*n).name.clone())
            .collect();
        rec.gpus_per_node = match (core.gpus, self.gpu_slot) {
            (Some(_), Some(g)) => core.held.iter().map(|(_, r)| r.gres[g]).collect(),
            _ => Vec::new(),
        };
        rec.start = core.start;
        rec.end = core.end;
    }

    /// Nodes in a `MAINT` reservation whose window is open (as of the last pass):
    /// sinfo shows them idle ones as `maint`.
    pub(crate) fn maint_nodes(&self) -> BTreeSet<sluice_core::NodeId> {
        self.sched
            .reservations()
            .filter(|r| r.flags.maint && r.active_at(r.usage.since))
            .flat_map(|r| r.nodes())
            .collect()
    }

    /// The core's reservation changes since the last pass, as record writes: ended and
    /// purged reservations deleted, repeated ones rewritten.
    pub(crate) fn reservation_events(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        for ev in self.sched.take_reservation_events() {
            match ev {
                ResvEvent::Ended(name) | ResvEvent::Purged(name) => {
                    self.resv_records.records.remove(&name);
                    self.resv_records.noted_idle.remove(&name);
                    effects.push(Effect::PersistReservation { name, record: None });
                }
                ResvEvent::Repeated(name, start, end) => {
                    if let Some(r) = self.resv_records.records.get_mut(&name) {
                        (r.start, r.end) = (start, end);
                        let json = serde_json::to_string(r).expect("records serialise");
                        effects.push(Effect::PersistReservation {
                            name,
                            record: Some(json),
                        });
                    }
                }
            }
        }
        effects
    }

    /// Reservations that have been idle (open, none of their jobs running) for
    /// [`IDLE_NOTE_AFTER`] seconds and were not reported in this idle spell, with the
    /// idle node- and GPU-seconds so far: one log line each.
    pub fn idle_reservation_notes(&mut self, now: i64) -> Vec<String> {
        let mut notes = Vec::new();
        for r in self.sched.reservations() {
            match r.usage.idle_since {
                Some(t) if now - t >= IDLE_NOTE_AFTER => {
                    if self.resv_records.noted_idle.insert(r.name.clone()) {
                        notes.push(format!(
                            "reservation {} idle for {} s: {} node-seconds and {} GPU-seconds reserved and unused so far",
                            r.name,
                            now - t,
                            r.usage.idle_node_s(),
                            r.usage.idle_gpu_s()
                        ));
                    }
                }
                Some(_) => {}
                None => {
                    self.resv_records.noted_idle.remove(&r.name);
                }
            }
        }
        notes
    }
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn purge_comp_prints_its_delay_as_slurm_prints_durations() {
        let record = |purge_after| ReservationRecord {
            flags: vec!["DAILY".into(), "PURGE_COMP".into()],
            purge_after,
            ..Default::default()
        };
        assert_eq!(flags_string(&record(None)), "DAILY,PURGE_COMP=00:05:00");
        assert_eq!(
            flags_string(&record(Some(90_061))),
            "DAILY,PURGE_COMP=1-01:01:01",
            "a day or more with Slurm's day count (secs2time_str)"
        );
    }
}
