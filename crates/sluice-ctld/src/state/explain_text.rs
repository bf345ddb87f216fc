//! The core's explanation of a queued job ([`sluice_core::explain`]) in the cluster's
//! words: node names as hostlists, GRES, accounts, QOS and users by name, times as
//! Slurm prints them. One sentence per fact, with the numbers.

use sluice_conf::duration::format_time;
use sluice_core::explain::{Change, Dimension, LimitHold, NodeGroup, NodeVerdict, QueuePosition};
use sluice_core::limits::check::Measure;
use sluice_core::limits::usage::Scope;
use sluice_core::limits::TresKind;
use sluice_core::{NodeId, PartitionState, PendingReason, Resources};
use sluice_proto::explain::{Cause, NodeLine, Suggestion};

use super::Controller;

/// `1 node`, `2 nodes`.
fn plural(n: u32, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

impl Controller {
    /// Node ids as a hostlist (`node[02-03]`).
    pub(super) fn hostlist(&self, nodes: &[NodeId]) -> String {
        let names: Vec<&str> = nodes
            .iter()
            .map(|n| self.conf.cluster.node(*n).name.as_str())
            .collect();
        sluice_conf::hostlist::compress(&names)
    }

    /// A GRES slot's name as gres.conf has it (`gpu`, `gpu:a100`).
    fn gres_name(&self, slot: sluice_core::tres::GresSlot) -> String {
        self.conf.cluster.gres.name(slot)
    }

    /// How much of one dimension `r` holds, with its unit.
    fn amount(&self, r: &Resources, d: Dimension) -> String {
        match d {
            Dimension::Cpus => plural(r.cpus, "CPU"),
            Dimension::Memory => format!("{} MiB", r.mem_mib),
            Dimension::Gres(slot) => {
                format!("{} {}", r.gres[slot], self.gres_name(slot))
            }
        }
    }

    /// The dimensions where `have` falls short of `needs`, CPUs first.
    fn short(&self, have: &Resources, needs: &Resources) -> Vec<Dimension> {
        let mut out = Vec::new();
        if have.cpus < needs.cpus {
            out.push(Dimension::Cpus);
        }
        if have.mem_mib < needs.mem_mib {
            out.push(Dimension::Memory);
        }
        for slot in 0..sluice_core::tres::MAX_GRES {
            if have.gres[slot] < needs.gres[slot] {
                out.push(Dimension::Gres(slot));
            }
        }
        out
    }

    /// One group of nodes and how they stand, in words.
    pub(super) fn node_line(&self, g: &NodeGroup) -> NodeLine {
        let first = g.nodes.first().map(|n| self.conf.cluster.node(*n));
        let reason = first
            .and_then(|n| self.node_overrides.get(&n.name))
            .map(|o| o.reason.clone())
            .filter(|r| !r.is_empty());
        let text = match &g.verdict {
            NodeVerdict::Down => match reason {
                Some(r) => format!("DOWN, reason '{r}'"),
                None => "DOWN (not responding)".into(),
            },
            NodeVerdict::Awaited => {
                let name = first.map(|n| n.name.as_str()).unwrap_or_default();
                let timeout = self.conf.net.slurmd_timeout;
                match self.liveness.silent_from(name) {
                    Some(since) if timeout > 0 => format!(
                        "UNKNOWN, waiting for its agent to register (DOWN at {} if it has \
                         not)",
                        sluice_proto::time::timestamp(since + timeout)
                    ),
                    _ => "UNKNOWN, waiting for its agent to register".into(),
                }
            }
            NodeVerdict::Drain => match reason {
                Some(r) => format!("DRAIN, reason '{r}'"),
                None => "DRAIN".into(),
            },
            NodeVerdict::Excluded => "excluded by the job (--exclude)".into(),
            NodeVerdict::NotListed => "not among the nodes it asks for (--nodelist)".into(),
            NodeVerdict::OutsideReservation(name) => format!("not in its reservation {name}"),
            NodeVerdict::NoFeature => "has none of the features it asks for (--constraint)".into(),
            NodeVerdict::TooSmall { capacity, needs } => {
                let parts: Vec<String> = self
                    .short(capacity, needs)
                    .into_iter()
                    .map(|d| {
                        format!(
                            "has {}, needs {}",
                            self.amount(capacity, d),
                            self.amount(needs, d)
                        )
                    })
                    .collect();
                format!("too small even when idle: {}", parts.join("; "))
            }
            NodeVerdict::Reserved(name) => format!("reserved for others (reservation {name})"),
            NodeVerdict::Busy {
                free,
                needs,
                scarce,
            } => {
                let capacity = first.map(|n| n.capacity).unwrap_or_default();
                let parts: Vec<String> = scarce
                    .iter()
                    .map(|&d| {
                        let of = self.amount(&capacity, d);
                        let free = self.amount(free, d);
                        let free = free.split(' ').next().unwrap_or("").to_string();
                        let needs = self.amount(needs, d);
                        let needs = needs.split(' ').next().unwrap_or("").to_string();
                        format!("{free} of {of} free, needs {needs}")
                    })
                    .collect();
                parts.join("; ")
            }
            NodeVerdict::Fits => "could start it now".into(),
        };
        NodeLine {
            nodes: self.hostlist(&g.nodes),
            text,
            fits: g.verdict == NodeVerdict::Fits,
        }
    }

    /// A TRES kind's name as sacctmgr prints it.
    fn tres_name(&self, k: TresKind) -> String {
        match k {
            TresKind::Cpu => "cpu".into(),
            TresKind::Mem => "mem (MiB)".into(),
            TresKind::Energy => "energy".into(),
            TresKind::Node => "node".into(),
            TresKind::Billing => "billing".into(),
            TresKind::Gres(slot) => format!("gres/{}", self.gres_name(slot)),
        }
    }

    pub(super) fn measure(&self, m: Measure) -> String {
        match m {
            Measure::RunningJobs => "running jobs".into(),
            Measure::SubmittedJobs => "jobs pending or running".into(),
            Measure::Tres(k) => self.tres_name(k),
            Measure::TresPerNode(k) => format!("{} per node", self.tres_name(k)),
            Measure::TresMins(k) => format!("{}-minutes", self.tres_name(k)),
            Measure::TresRunMins(k) => format!("{}-minutes still to run", self.tres_name(k)),
            Measure::WallSeconds => "seconds of time limit".into(),
        }
    }

    fn qos_name(&self, id: sluice_core::limits::QosId) -> String {
        self.accounts
            .all_qos()
            .find(|q| q.id == id.0)
            .map_or_else(|| format!("#{}", id.0), |q| q.name.clone())
    }

    fn assoc_name(&self, id: sluice_core::limits::AssocId) -> String {
        match self.accounts.association_by_id(id.0) {
            Some(a) => match &a.user {
                Some(u) => format!("user {u} in account {}", a.account),
                None => format!("account {}", a.account),
            },
            None => format!("association #{}", id.0),
        }
    }

    fn scope_name(&self, s: Scope) -> String {
        match s {
            Scope::Assoc(a) => self.assoc_name(a),
            Scope::Qos(q) => format!("QOS {}", self.qos_name(q)),
            Scope::QosUser(q, uid) => {
                let name = self
                    .jobs
                    .values()
                    .find(|j| j.uid == uid)
                    .map_or_else(|| uid.to_string(), |j| j.user.to_string());
                format!("user {name} in QOS {}", self.qos_name(q))
            }
            Scope::QosAccount(q, a) => {
                format!("{} in QOS {}", self.assoc_name(a), self.qos_name(q))
            }
        }
    }

    /// A limit that holds the job, with its numbers.
    pub(super) fn limit_cause(&self, h: &LimitHold) -> Cause {
        let what = self.measure(h.measure);
        let text = match h.scope {
            Some(scope) => {
                let own = match h.own {
                    Some(own) => format!(" ({own} of it this user's own)"),
                    None => String::new(),
                };
                format!(
                    "{} allows {} {what}; {} in use{own}; this job adds {}",
                    self.scope_name(scope),
                    h.limit,
                    h.in_use,
                    h.job
                )
            }
            None => format!("it asks for {} {what}; the limit is {}", h.job, h.limit),
        };
        Cause {
            family: "limit".into(),
            reason: h.reason.into(),
            text,
        }
    }

    /// The cause behind the core's reason code, for the reasons that are not limits.
    pub(super) fn reason_cause(
        &self,
        r: &super::Job,
        reason: PendingReason,
        queue: &QueuePosition,
    ) -> Option<Cause> {
        let part = self
            .partition_of(&r.partition)
            .map(|p| self.conf.cluster.partition(p));
        let pname = &r.partition;
        let (family, text) = match reason {
            PendingReason::None => (
                "priority",
                "not yet examined by a scheduling pass".to_string(),
            ),
            PendingReason::Priority => (
                "priority",
                format!(
                    "{} ahead of it in partition {pname} {} first (it is {} of {}){}",
                    plural(queue.ahead, "job"),
                    if queue.ahead == 1 { "comes" } else { "come" },
                    queue.rank,
                    queue.of,
                    match queue.waiting_ahead {
                        0 => String::new(),
                        n => format!(
                            "; {} ahead of it {} on {} own and {} not count",
                            plural(n, "more job"),
                            if n == 1 { "waits" } else { "wait" },
                            if n == 1 { "its" } else { "their" },
                            if n == 1 { "does" } else { "do" },
                        ),
                    }
                ),
            ),
            PendingReason::Resources => (
                "resources",
                format!("no set of nodes in partition {pname} can hold it now (see Resources)"),
            ),
            PendingReason::BeginTime => return None,
            PendingReason::PartitionDown | PendingReason::PartitionInactive => {
                let state = match part.map(|p| p.state) {
                    Some(PartitionState::Inactive) => "INACTIVE",
                    Some(PartitionState::Drain) => "DRAIN",
                    _ => "DOWN",
                };
                ("partition", format!("partition {pname} is {state}"))
            }
            PendingReason::PartitionTimeLimit => (
                "partition",
                format!(
                    "its time limit {} exceeds partition {pname}'s MaxTime {}",
                    format_time(r.time_limit),
                    format_time(part.and_then(|p| p.max_time))
                ),
            ),
            PendingReason::PartitionNodeLimit => {
                let (min, max) = part.map_or((0, None), |p| (p.min_nodes, p.max_nodes));
                (
                    "partition",
                    format!(
                        "it asks for {} nodes; partition {pname} allows MinNodes={min} MaxNodes={}",
                        r.desc.nodes.map_or(1, |n| n.0),
                        max.map_or("UNLIMITED".to_string(), |m| m.to_string())
                    ),
                )
            }
            PendingReason::NodesUnavailable => (
                "resources",
                format!(
                    "the nodes of partition {pname} it could use are down, drained or taken by \
                     jobs of higher-priority partitions (see Resources)"
                ),
            ),
            PendingReason::ReqNodeNotAvail => (
                "resources",
                format!("no node of partition {pname} it could use is up (see Resources)"),
            ),
            PendingReason::NamedNodesUnavailable => (
                "resources",
                format!(
                    "nodes it names are down, drained or kept for a job ahead of it: {} \
                     (see Resources)",
                    self.unavailable_named(r.id)
                ),
            ),
            PendingReason::ReservedForOther => (
                "reservation",
                "the nodes it could use now are reserved for others (see Resources)".to_string(),
            ),
            PendingReason::Reservation => (
                "reservation",
                format!(
                    "its reservation {} has not begun, or has too little time left for its time limit",
                    r.desc.reservation.clone().unwrap_or_default()
                ),
            ),
            PendingReason::AccountNotAllowed => (
                "partition",
                format!("partition {pname} does not allow account {} (AllowAccounts/DenyAccounts)", r.account),
            ),
            PendingReason::QosNotAllowed => (
                "partition",
                format!("partition {pname} does not allow QOS {} (AllowQos/DenyQos)", r.qos),
            ),
            PendingReason::Limit(_) => return None,
        };
        Some(Cause {
            family: family.into(),
            reason: reason.as_str().into(),
            text,
        })
    }

    /// A change that would start the job sooner, as options and in words.
    pub(super) fn suggestion(
        &self,
        r: &super::Job,
        c: &sluice_core::explain::Counterfactual,
    ) -> Suggestion {
        let (option, text) = match &c.change {
            Change::TimeLimit { minutes } => (
                format!("--time={minutes}"),
                format!(
                    "a time limit of {} or less (it asks {})",
                    format_time(Some(minutes * 60)),
                    format_time(r.time_limit)
                ),
            ),
            Change::GpusPerNode { gpus } => (
                format!("--gpus-per-node={gpus}"),
                format!("{gpus} GPUs per node"),
            ),
            Change::Nodes { nodes, ntasks } => (
                format!("-N {nodes} -n {ntasks}"),
                format!("{} and {}", plural(*nodes, "node"), plural(*ntasks, "task")),
            ),
            Change::Cpus {
                ntasks,
                cpus_per_task,
            } => (
                format!("-n {ntasks} -c {cpus_per_task}"),
                format!(
                    "{} in all",
                    plural(ntasks.saturating_mul(*cpus_per_task), "CPU")
                ),
            ),
            Change::Alternative(a) => {
                let mut opts = Vec::new();
                let mut words = Vec::new();
                if let Some(p) = a.partition {
                    let name = &self.conf.cluster.partition(p).name;
                    opts.push(format!("-p {name}"));
                    words.push(format!("partition {name}"));
                }
                if let Some(q) = a.qos {
                    let name = self.qos_name(q);
                    opts.push(format!("--qos={name}"));
                    words.push(format!("QOS {name}"));
                }
                (
                    opts.join(" "),
                    format!("in {}, which you may use", words.join(" with ")),
                )
            }
            Change::NotExclusive => (
                "without --exclusive".into(),
                "sharing nodes with other jobs".into(),
            ),
            Change::NoConstraint => (
                "without --constraint".into(),
                "on any node of its partition".into(),
            ),
        };
        Suggestion {
            option,
            text,
            start: c.at,
            nodes: self.hostlist(&c.nodes),
        }
    }
}
