//! Slurm's pending reasons for accounting limits, by name exactly as `squeue` prints
//! them (Slurm's `job_state_reason_string`).
//!
//! The TRES limits' names follow a pattern with irregular spellings (`AssocGrpCpuLimit`
//! but `AssocGrpMemLimit`, `AssocGrpCPUMinutesLimit` but `AssocGrpMemMinutes`,
//! `QOSGrpMemoryMinutes`), so they are spelled out in tables rather than assembled.

use super::TresKind;

/// Which limit of a TRES was hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TresLimitKind {
    /// `GrpTRES`.
    Grp,
    /// `GrpTRESMins`.
    GrpMins,
    /// `GrpTRESRunMins`.
    GrpRunMins,
    /// `MaxTRESPerJob`.
    MaxPerJob,
    /// `MaxTRESPerNode`.
    MaxPerNode,
    /// `MaxTRESMinsPerJob`.
    MaxMinsPerJob,
    /// `MaxTRESPerUser` (QOS).
    MaxPerUser,
    /// `MaxTRESPerAccount` (QOS).
    MaxPerAccount,
    /// `MinTRESPerJob` (QOS).
    Min,
}

/// Columns of the tables below: Grp, GrpMins, GrpRunMins, MaxPerJob, MaxPerNode,
/// MaxMinsPerJob, MaxPerUser, Min, MaxPerAccount.
type Row = [&'static str; 9];

const ASSOC: [Row; 6] = [
    [
        "AssocGrpCpuLimit",
        "AssocGrpCPUMinutesLimit",
        "AssocGrpCPURunMinutesLimit",
        "AssocMaxCpuPerJobLimit",
        "AssocMaxCpuPerNode",
        "AssocMaxCpuMinutesPerJobLimit",
        "",
        "",
        "",
    ],
    [
        "AssocGrpMemLimit",
        "AssocGrpMemMinutes",
        "AssocGrpMemRunMinutes",
        "AssocMaxMemPerJob",
        "AssocMaxMemPerNode",
        "AssocMaxMemMinutesPerJob",
        "",
        "",
        "",
    ],
    [
        "AssocGrpEnergy",
        "AssocGrpEnergyMinutes",
        "AssocGrpEnergyRunMinutes",
        "AssocMaxEnergyPerJob",
        "AssocMaxEnergyPerNode",
        "AssocMaxEnergyMinutesPerJob",
        "",
        "",
        "",
    ],
    [
        "AssocGrpNodeLimit",
        "AssocGrpNodeMinutes",
        "AssocGrpNodeRunMinutes",
        "AssocMaxNodePerJobLimit",
        "AssocMaxUnknownPerNode",
        "AssocMaxNodeMinutesPerJob",
        "",
        "",
        "",
    ],
    [
        "AssocGrpBilling",
        "AssocGrpBillingMinutes",
        "AssocGrpBillingRunMinutes",
        "AssocMaxBillingPerJob",
        "AssocMaxBillingPerNode",
        "AssocMaxBillingMinutesPerJob",
        "",
        "",
        "",
    ],
    [
        "AssocGrpGRES",
        "AssocGrpGRESMinutes",
        "AssocGrpGRESRunMinutes",
        "AssocMaxGRESPerJob",
        "AssocMaxGRESPerNode",
        "AssocMaxGRESMinutesPerJob",
        "",
        "",
        "",
    ],
];

const QOS: [Row; 6] = [
    [
        "QOSGrpCpuLimit",
        "QOSGrpCPUMinutesLimit",
        "QOSGrpCPURunMinutesLimit",
        "QOSMaxCpuPerJobLimit",
        "QOSMaxCpuPerNode",
        "QOSMaxCpuMinutesPerJobLimit",
        "QOSMaxCpuPerUserLimit",
        "QOSMinCpuNotSatisfied",
        "MaxCpuPerAccount",
    ],
    [
        "QOSGrpMemLimit",
        "QOSGrpMemoryMinutes",
        "QOSGrpMemoryRunMinutes",
        "QOSMaxMemoryPerJob",
        "QOSMaxMemoryPerNode",
        "QOSMaxMemoryMinutesPerJob",
        "QOSMaxMemoryPerUser",
        "QOSMinMemory",
        "MaxMemoryPerAccount",
    ],
    [
        "QOSGrpEnergy",
        "QOSGrpEnergyMinutes",
        "QOSGrpEnergyRunMinutes",
        "QOSMaxEnergyPerJob",
        "QOSMaxEnergyPerNode",
        "QOSMaxEnergyMinutesPerJob",
        "QOSMaxEnergyPerUser",
        "QOSMinEnergy",
        "MaxEnergyPerAccount",
    ],
    [
        "QOSGrpNodeLimit",
        "QOSGrpNodeMinutes",
        "QOSGrpNodeRunMinutes",
        "QOSMaxNodePerJobLimit",
        "QOSMaxUnknownPerNode",
        "QOSMaxNodeMinutesPerJob",
        "QOSMaxNodePerUserLimit",
        "QOSMinNode",
        "MaxNodePerAccount",
    ],
    [
        "QOSGrpBilling",
        "QOSGrpBillingMinutes",
        "QOSGrpBillingRunMinutes",
        "QOSMaxBillingPerJob",
        "QOSMaxBillingPerNode",
        "QOSMaxBillingMinutesPerJob",
        "QOSMaxBillingPerUser",
        "QOSMinBilling",
        "MaxBillingPerAccount",
    ],
    [
        "QOSGrpGRES",
        "QOSGrpGRESMinutes",
        "QOSGrpGRESRunMinutes",
        "QOSMaxGRESPerJob",
        "QOSMaxGRESPerNode",
        "QOSMaxGRESMinutesPerJob",
        "QOSMaxGRESPerUser",
        "QOSMinGRES",
        "MaxGRESPerAccount",
    ],
];

fn row(kind: TresKind) -> usize {
    match kind {
        TresKind::Cpu => 0,
        TresKind::Mem => 1,
        TresKind::Energy => 2,
        TresKind::Node => 3,
        TresKind::Billing => 4,
        TresKind::Gres(_) => 5,
    }
}

fn column(limit: TresLimitKind) -> usize {
    match limit {
        TresLimitKind::Grp => 0,
        TresLimitKind::GrpMins => 1,
        TresLimitKind::GrpRunMins => 2,
        TresLimitKind::MaxPerJob => 3,
        TresLimitKind::MaxPerNode => 4,
        TresLimitKind::MaxMinsPerJob => 5,
        TresLimitKind::MaxPerUser => 6,
        TresLimitKind::Min => 7,
        TresLimitKind::MaxPerAccount => 8,
    }
}

/// The reason for an association's TRES limit (`AssocGrpGRES`, `AssocMaxCpuPerJobLimit`,
/// ...). Associations have no per-user, per-account or minimum TRES limits: those give
/// `AssocGrpUnknown`.
pub fn assoc_tres(kind: TresKind, limit: TresLimitKind) -> &'static str {
    let name = ASSOC[row(kind)][column(limit)];
    if name.is_empty() {
        "AssocGrpUnknown"
    } else {
        name
    }
}

/// The reason for a QOS's TRES limit (`QOSGrpGRES`, `QOSMaxGRESPerUser`,
/// `MaxCpuPerAccount`, ...).
pub fn qos_tres(kind: TresKind, limit: TresLimitKind) -> &'static str {
    QOS[row(kind)][column(limit)]
}

/// `GrpJobs` of an association.
pub const ASSOC_GRP_JOBS: &str = "AssocGrpJobsLimit";
/// `MaxJobs` of an association.
pub const ASSOC_MAX_JOBS: &str = "AssocMaxJobsLimit";
/// `GrpSubmitJobs` of an association.
pub const ASSOC_GRP_SUBMIT: &str = "AssocGrpSubmitJobsLimit";
/// `MaxSubmitJobs` of an association.
pub const ASSOC_MAX_SUBMIT: &str = "AssocMaxSubmitJobLimit";
/// `MaxWallDurationPerJob` of an association.
pub const ASSOC_MAX_WALL: &str = "AssocMaxWallDurationPerJobLimit";
/// `GrpJobs` of a QOS.
pub const QOS_GRP_JOBS: &str = "QOSGrpJobsLimit";
/// `GrpSubmitJobs` of a QOS.
pub const QOS_GRP_SUBMIT: &str = "QOSGrpSubmitJobsLimit";
/// `MaxJobsPerUser` of a QOS.
pub const QOS_MAX_JOBS_PER_USER: &str = "QOSMaxJobsPerUserLimit";
/// `MaxSubmitJobsPerUser` of a QOS.
pub const QOS_MAX_SUBMIT_PER_USER: &str = "QOSMaxSubmitJobPerUserLimit";
/// `MaxJobsPerAccount` of a QOS.
pub const QOS_MAX_JOBS_PER_ACCOUNT: &str = "MaxJobsPerAccount";
/// `MaxSubmitJobsPerAccount` of a QOS.
pub const QOS_MAX_SUBMIT_PER_ACCOUNT: &str = "MaxSubmitJobsPerAccount";
/// `MaxWallDurationPerJob` of a QOS.
pub const QOS_MAX_WALL: &str = "QOSMaxWallDurationPerJobLimit";

/// The limits' names that are not TRES limits, and the name of a TRES limit
/// associations do not have.
const OTHERS: [&str; 13] = [
    ASSOC_GRP_JOBS,
    ASSOC_MAX_JOBS,
    ASSOC_GRP_SUBMIT,
    ASSOC_MAX_SUBMIT,
    ASSOC_MAX_WALL,
    QOS_GRP_JOBS,
    QOS_GRP_SUBMIT,
    QOS_MAX_JOBS_PER_USER,
    QOS_MAX_SUBMIT_PER_USER,
    QOS_MAX_JOBS_PER_ACCOUNT,
    QOS_MAX_SUBMIT_PER_ACCOUNT,
    QOS_MAX_WALL,
    "AssocGrpUnknown",
];

/// The limit reason named `text` exactly, as this module spells it: how a name read
/// back from text (a job record the controller wrote) becomes a
/// [`crate::PendingReason::Limit`] again. `None` for any other text.
pub fn named(text: &str) -> Option<&'static str> {
    ASSOC
        .iter()
        .chain(QOS.iter())
        .flatten()
        .chain(OTHERS.iter())
        .find(|name| !name.is_empty() && **name == text)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_slurms() {
        assert_eq!(
            assoc_tres(TresKind::Gres(0), TresLimitKind::Grp),
            "AssocGrpGRES"
        );
        assert_eq!(
            assoc_tres(TresKind::Cpu, TresLimitKind::Grp),
            "AssocGrpCpuLimit"
        );
        assert_eq!(
            assoc_tres(TresKind::Cpu, TresLimitKind::GrpRunMins),
            "AssocGrpCPURunMinutesLimit"
        );
        assert_eq!(
            assoc_tres(TresKind::Node, TresLimitKind::MaxPerJob),
            "AssocMaxNodePerJobLimit"
        );
        assert_eq!(
            qos_tres(TresKind::Gres(3), TresLimitKind::MaxPerUser),
            "QOSMaxGRESPerUser"
        );
        assert_eq!(
            qos_tres(TresKind::Mem, TresLimitKind::GrpMins),
            "QOSGrpMemoryMinutes"
        );
        assert_eq!(
            qos_tres(TresKind::Cpu, TresLimitKind::MaxPerAccount),
            "MaxCpuPerAccount"
        );
    }

    #[test]
    fn every_name_is_found_again_and_nothing_else() {
        for kind in [
            TresKind::Cpu,
            TresKind::Mem,
            TresKind::Node,
            TresKind::Gres(2),
        ] {
            for limit in [
                TresLimitKind::Grp,
                TresLimitKind::GrpMins,
                TresLimitKind::GrpRunMins,
                TresLimitKind::MaxPerJob,
                TresLimitKind::MaxPerUser,
                TresLimitKind::Min,
            ] {
                let name = assoc_tres(kind, limit);
                assert_eq!(named(name), Some(name));
                let name = qos_tres(kind, limit);
                assert_eq!(named(name), Some(name));
            }
        }
        assert_eq!(named(QOS_MAX_WALL), Some(QOS_MAX_WALL));
        assert_eq!(named(""), None);
        assert_eq!(named("Resources"), None);
    }
}
