//! Why a pending job waits, as the controller keeps it: one type for the core's reasons
//! (a queued job's, limits included) and the controller's own (the jobs it keeps out of
//! the core: holds, dependencies, throttles, a run still ending, a job the core
//! refused), and why a finished job ended ([`Reason::ended`]). It becomes Slurm's text only where a record is built
//! ([`super::Controller::record`]), and is read back from that text when records are
//! loaded ([`Reason::from_text`]).

use sluice_core::borrow::{BORROW_LIMIT, COHORT_QUOTA};
use sluice_core::PendingReason;
use sluice_proto::types::JobState;

/// A pending job's reason, or a finished job's, exactly one of Slurm's (`squeue %r`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The core's: `None`, `Resources`, `Priority`, `BeginTime` (also a requeued job
    /// whose previous run is still ending), partition and reservation reasons, and the
    /// accounting limits by name (`AssocGrpCpuLimit`, `CohortQuota`, ...).
    Core(PendingReason),
    /// `JobHeldUser`: held by its owner.
    HeldUser,
    /// `JobHeldAdmin`: held by an operator.
    HeldAdmin,
    /// `ReservationDeleted`: its reservation went away while it waited.
    ReservationDeleted,
    /// `job requeued in held state`: requeued held (`scontrol requeuehold`), Slurm's
    /// user hold with its own words.
    RequeuedHeld,
    /// `Dependency`: its dependency may still be satisfied.
    Dependency,
    /// `DependencyNeverSatisfied`: its dependency can no longer be satisfied.
    DependencyNeverSatisfied,
    /// `JobArrayTaskLimit`: its array runs as many tasks as its throttle allows.
    ArrayTaskLimit,
    /// `BadConstraints`: the core refused it when it was to be queued (the
    /// configuration changed under it); it failed.
    BadConstraints,
    /// `NonZeroExitCode`: its batch script (or allocation) exited non-zero; it failed
    /// (Slurm's `FAIL_EXIT_CODE`).
    NonZeroExitCode,
    /// `JobLaunchFailure`: its batch script was killed by a signal; it failed. Slurm
    /// 22.05 gives a signalled script `FAIL_LAUNCH` (23.02 made it `RaisedSignal:N(..)`).
    LaunchFailure,
    /// `TimeLimit`: it reached its time limit (`FAIL_TIMEOUT`).
    TimeLimit,
    /// `NodeDown`: its node failed under it (`FAIL_DOWN_NODE`).
    NodeDown,
    /// `OutOfMemory`: it was killed for its memory (`FAIL_OOM`).
    OutOfMemory,
}

impl Default for Reason {
    fn default() -> Self {
        Reason::Core(PendingReason::None)
    }
}

/// The controller's own reasons and their texts.
const OWN: [(Reason, &str); 13] = [
    (Reason::HeldUser, "JobHeldUser"),
    (Reason::HeldAdmin, "JobHeldAdmin"),
    (Reason::ReservationDeleted, "ReservationDeleted"),
    (Reason::RequeuedHeld, "job requeued in held state"),
    (Reason::Dependency, "Dependency"),
    (Reason::DependencyNeverSatisfied, "DependencyNeverSatisfied"),
    (Reason::ArrayTaskLimit, "JobArrayTaskLimit"),
    (Reason::BadConstraints, "BadConstraints"),
    (Reason::NonZeroExitCode, "NonZeroExitCode"),
    (Reason::LaunchFailure, "JobLaunchFailure"),
    (Reason::TimeLimit, "TimeLimit"),
    (Reason::NodeDown, "NodeDown"),
    (Reason::OutOfMemory, "OutOfMemory"),
];

/// How the partition-access reasons begin in Slurm's own words (see
/// `PartitionAccess::describe`), which is how a record prints them.
const ACCOUNT_WORDS: &str = "Job's account not permitted to use this partition";
const QOS_WORDS: &str = "Job's QOS not permitted to use this partition";

impl Reason {
    /// Why a job held by `hold` waits (or, held while it runs, its reason).
    pub fn of_hold(hold: &sluice_proto::types::Hold) -> Reason {
        use sluice_proto::types::Hold;
        match hold {
            Hold::ReservationDeleted(_) => Reason::ReservationDeleted,
            Hold::Admin => Reason::HeldAdmin,
            Hold::User => Reason::HeldUser,
            Hold::Requeued | Hold::SpecialExit | Hold::RequeuedAdmin | Hold::SpecialExitAdmin => {
                Reason::RequeuedHeld
            }
        }
    }

    /// No reason: `None`.
    pub const NONE: Reason = Reason::Core(PendingReason::None);

    /// Why a job that ended as `state`, with its batch script's (or allocation's)
    /// `exit_code` and `signal`, ended, as slurmctld 22.05 sets it (`_job_complete`,
    /// `job_time_limit`, `kill_running_job_by_node_name`): `None` where Slurm leaves
    /// the job's reason as it was (completed, cancelled and preempted jobs keep the
    /// `None` they got on starting; a job cancelled while pending keeps why it waited).
    pub fn ended(state: JobState, exit_code: i32, signal: i32) -> Option<Reason> {
        match state {
            JobState::Failed if exit_code != 0 => Some(Reason::NonZeroExitCode),
            JobState::Failed if signal != 0 => Some(Reason::LaunchFailure),
            JobState::Timeout => Some(Reason::TimeLimit),
            JobState::NodeFail => Some(Reason::NodeDown),
            JobState::OutOfMemory => Some(Reason::OutOfMemory),
            _ => None,
        }
    }

    /// The code as Slurm prints it. The partition-access reasons print as their code
    /// here (`AccountNotAllowed`); a record names the partition's list instead
    /// (`Job's account not permitted to use this partition (...)`), which needs the
    /// job and its partition.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Core(r) => r.as_str(),
            own => OWN
                .iter()
                .find(|(r, _)| *r == own)
                .map_or("None", |(_, text)| text),
        }
    }

    /// The reason a record printed as `text` (what [`Reason::as_str`] or a record's
    /// partition-access words give). Text no version of Sluice wrote reads as `None`.
    pub fn from_text(text: &str) -> Reason {
        if let Some((r, _)) = OWN.iter().find(|(_, t)| *t == text) {
            return *r;
        }
        if let Some(r) = PendingReason::named(text) {
            return Reason::Core(r);
        }
        if let Some(name) = sluice_core::limits::reason::named(text) {
            return Reason::Core(PendingReason::Limit(name));
        }
        if let Some(name) = [BORROW_LIMIT, COHORT_QUOTA]
            .into_iter()
            .find(|n| *n == text)
        {
            return Reason::Core(PendingReason::Limit(name));
        }
        if text.starts_with(ACCOUNT_WORDS) {
            return Reason::Core(PendingReason::AccountNotAllowed);
        }
        if text.starts_with(QOS_WORDS) {
            return Reason::Core(PendingReason::QosNotAllowed);
        }
        tracing::debug!("a job record's reason '{text}' is not one Sluice knows; read as None");
        Reason::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_prints_as_slurm_and_reads_back() {
        let mut all: Vec<Reason> = OWN.iter().map(|(r, _)| *r).collect();
        all.extend(PendingReason::FIXED.map(Reason::Core));
        all.extend(
            [
                PendingReason::Limit("AssocGrpCpuLimit"),
                PendingReason::Limit("QOSMaxWallDurationPerJobLimit"),
                PendingReason::Limit(COHORT_QUOTA),
            ]
            .map(Reason::Core),
        );
        for r in all {
            assert_eq!(Reason::from_text(r.as_str()), r, "{}", r.as_str());
        }
        assert_eq!(Reason::HeldUser.as_str(), "JobHeldUser");
        assert_eq!(Reason::ArrayTaskLimit.as_str(), "JobArrayTaskLimit");
        assert_eq!(
            Reason::Core(PendingReason::NodesUnavailable).as_str(),
            "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher \
             priority partitions"
        );
        assert_eq!(
            Reason::from_text(
                "Job's account not permitted to use this partition (debug allows phys not chem)"
            ),
            Reason::Core(PendingReason::AccountNotAllowed)
        );
        assert_eq!(Reason::from_text("Whatever"), Reason::NONE);
    }

    #[test]
    fn a_finished_job_ends_for_slurms_reason() {
        let ended = |state, code, signal| Reason::ended(state, code, signal).map(Reason::as_str);
        assert_eq!(ended(JobState::Failed, 3, 0), Some("NonZeroExitCode"));
        assert_eq!(ended(JobState::Failed, 0, 9), Some("JobLaunchFailure"));
        assert_eq!(ended(JobState::Timeout, 0, 0), Some("TimeLimit"));
        assert_eq!(ended(JobState::NodeFail, 0, 0), Some("NodeDown"));
        assert_eq!(ended(JobState::OutOfMemory, 0, 125), Some("OutOfMemory"));
        // Slurm leaves these jobs' reasons as they were.
        assert_eq!(ended(JobState::Completed, 0, 0), None);
        assert_eq!(ended(JobState::Cancelled, 0, 15), None);
        assert_eq!(ended(JobState::Preempted, 0, 0), None);
    }
}
