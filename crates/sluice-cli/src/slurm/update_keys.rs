//! The keys `scontrol update` knows, as Slurm 22.05's `scontrol` matches them: a word
//! names a key when it is, case aside, a prefix of the key's name at least as long as
//! the key's shortest form (`Time=10` is not `TimeLimit`, `TimeL=10` is). The first
//! match in Slurm's order wins. A key Slurm does not know is refused by the command
//! itself (`Update of this parameter is not supported: KEY=VALUE`); one it knows but
//! Sluice does not change is refused by the controller.

/// A key: its name, the shortest prefix that names it, and the name it is sent as.
type Key = (&'static str, usize, &'static str);

/// Job keys, in the order Slurm's `scontrol update job` tries them.
const JOB: &[Key] = &[
    ("JobId", 3, "JobId"),
    ("AdminComment", 3, "AdminComment"),
    ("ArrayTaskThrottle", 10, "ArrayTaskThrottle"),
    ("Comment", 3, "Comment"),
    ("Clusters", 8, "Clusters"),
    ("ClusterFeatures", 8, "ClusterFeatures"),
    ("DelayBoot", 5, "DelayBoot"),
    ("TimeLimit", 5, "TimeLimit"),
    ("TimeMin", 5, "TimeMin"),
    ("Priority", 2, "Priority"),
    ("Nice", 2, "Nice"),
    ("CPUsPerTask", 6, "CPUsPerTask"),
    ("CpusPerTres", 9, "CpusPerTres"),
    ("NumCPUs", 6, "NumCPUs"),
    ("NumTasks", 8, "NumTasks"),
    ("ReqProcs", 8, "NumTasks"),
    ("Requeue", 4, "Requeue"),
    ("ReqNodes", 8, "NumNodes"),
    ("NumNodes", 8, "NumNodes"),
    ("ReqSockets", 4, "ReqSockets"),
    ("ReqCores", 4, "ReqCores"),
    ("TasksPerNode", 2, "TasksPerNode"),
    ("ReqThreads", 4, "ReqThreads"),
    ("MinCPUsNode", 4, "MinCPUsNode"),
    ("MinMemoryNode", 10, "MinMemoryNode"),
    ("MinMemoryCPU", 10, "MinMemoryCPU"),
    ("MinTmpDiskNode", 5, "MinTmpDiskNode"),
    ("Partition", 2, "Partition"),
    ("QOS", 2, "QOS"),
    ("ReservationName", 3, "ReservationName"),
    ("Name", 2, "JobName"),
    ("JobName", 4, "JobName"),
    ("WCKey", 1, "WCKey"),
    ("StdOut", 6, "StdOut"),
    ("Switches", 5, "Switches"),
    ("wait-for-switch", 5, "wait-for-switch"),
    ("OverSubscribe", 2, "OverSubscribe"),
    ("Shared", 2, "OverSubscribe"),
    ("Contiguous", 3, "Contiguous"),
    ("CoreSpec", 4, "CoreSpec"),
    ("ThreadSpec", 4, "ThreadSpec"),
    ("ExcNodeList", 3, "ExcNodeList"),
    ("NodeList", 8, "ReqNodeList"),
    ("ReqNodeList", 8, "ReqNodeList"),
    ("Features", 1, "Features"),
    ("Prefer", 3, "Prefer"),
    ("Gres", 2, "Gres"),
    ("TresPerNode", 8, "TresPerNode"),
    ("Account", 1, "Account"),
    ("BurstBuffer", 1, "BurstBuffer"),
    ("Dependency", 1, "Dependency"),
    ("Licenses", 1, "Licenses"),
    ("EligibleTime", 2, "StartTime"),
    ("StartTime", 2, "StartTime"),
    ("EndTime", 2, "EndTime"),
    ("Reboot", 3, "Reboot"),
    ("UserID", 3, "UserID"),
    ("Deadline", 3, "Deadline"),
    ("SiteFactor", 5, "SiteFactor"),
    ("ResetAccrueTime", 3, "ResetAccrueTime"),
    ("WorkDir", 4, "WorkDir"),
    ("MailType", 5, "MailType"),
    ("MailUser", 5, "MailUser"),
];

/// Node keys, in the order Slurm's `scontrol update node` tries them.
const NODE: &[Key] = &[
    ("NodeName", 3, "NodeName"),
    ("ActiveFeatures", 3, "ActiveFeatures"),
    ("AvailableFeatures", 3, "AvailableFeatures"),
    ("Features", 1, "AvailableFeatures"),
    ("Comment", 3, "Comment"),
    ("CpuBind", 7, "CpuBind"),
    ("Extra", 5, "Extra"),
    ("Gres", 4, "Gres"),
    ("NodeAddr", 5, "NodeAddr"),
    ("NodeHostName", 5, "NodeHostName"),
    ("Reason", 3, "Reason"),
    ("ResumeAfter", 7, "ResumeAfter"),
    ("State", 3, "State"),
    ("Weight", 3, "Weight"),
];

/// Partition keys, in the order Slurm 22.05's `scontrol update partition` tries them
/// (`Priority` sets both the tier and the job factor).
const PARTITION: &[Key] = &[
    ("PartitionName", 2, "PartitionName"),
    ("MaxTime", 4, "MaxTime"),
    ("CpuBind", 7, "CpuBind"),
    ("DefaultTime", 8, "DefaultTime"),
    ("MaxCPUsPerNode", 4, "MaxCPUsPerNode"),
    ("MaxNodes", 4, "MaxNodes"),
    ("MinNodes", 2, "MinNodes"),
    ("Default", 7, "Default"),
    ("DisableRootJobs", 1, "DisableRootJobs"),
    ("ExclusiveUser", 1, "ExclusiveUser"),
    ("Hidden", 1, "Hidden"),
    ("LLN", 1, "LLN"),
    ("RootOnly", 3, "RootOnly"),
    ("ReqResv", 3, "ReqResv"),
    ("OverSubscribe", 5, "OverSubscribe"),
    ("Shared", 2, "OverSubscribe"),
    ("OverTimeLimit", 5, "OverTimeLimit"),
    ("PreemptMode", 3, "PreemptMode"),
    ("Priority", 3, "Priority"),
    ("PriorityJobFactor", 3, "PriorityJobFactor"),
    ("PriorityTier", 3, "PriorityTier"),
    ("State", 2, "State"),
    ("Nodes", 1, "Nodes"),
    ("AllowGroups", 6, "AllowGroups"),
    ("AllowAccounts", 6, "AllowAccounts"),
    ("AllowQos", 6, "AllowQos"),
    ("DenyAccounts", 5, "DenyAccounts"),
    ("DenyQos", 5, "DenyQos"),
    ("AllocNodes", 6, "AllocNodes"),
    ("Alternate", 3, "Alternate"),
    ("GraceTime", 5, "GraceTime"),
    ("DefMemPerCPU", 10, "DefMemPerCPU"),
    ("DefMemPerNode", 10, "DefMemPerNode"),
    ("MaxMemPerCPU", 10, "MaxMemPerCPU"),
    ("MaxMemPerNode", 10, "MaxMemPerNode"),
    ("QoS", 3, "QOS"),
    ("JobDefaults", 4, "JobDefaults"),
    ("TresBillingWeights", 1, "TresBillingWeights"),
];

fn find(keys: &[Key], tag: &str) -> Option<&'static str> {
    let tag = tag.to_ascii_lowercase();
    keys.iter()
        .find(|(name, min, _)| {
            tag.len() >= *min
                && tag.len() <= name.len()
                && name.to_ascii_lowercase().starts_with(&tag)
        })
        .map(|(_, _, sent)| *sent)
}

/// The job key `tag` names (as sent to the controller), if Slurm knows it.
pub fn job_key(tag: &str) -> Option<&'static str> {
    find(JOB, tag)
}

/// The node key `tag` names, if Slurm knows it.
pub fn node_key(tag: &str) -> Option<&'static str> {
    find(NODE, tag)
}

/// The partition key `tag` names (as sent to the controller), if Slurm knows it.
pub fn partition_key(tag: &str) -> Option<&'static str> {
    find(PARTITION, tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_keys_match_as_slurms_scontrol_matches_them() {
        assert_eq!(partition_key("PartitionName"), Some("PartitionName"));
        assert_eq!(partition_key("pa"), Some("PartitionName"));
        assert_eq!(partition_key("MaxT"), Some("MaxTime"));
        assert_eq!(partition_key("Max"), None);
        assert_eq!(partition_key("Pri"), Some("Priority"));
        assert_eq!(partition_key("PriorityTier"), Some("PriorityTier"));
        assert_eq!(partition_key("st"), Some("State"));
        assert_eq!(partition_key("N"), Some("Nodes"));
        assert_eq!(partition_key("Default"), Some("Default"));
        assert_eq!(partition_key("DefaultT"), Some("DefaultTime"));
        assert_eq!(partition_key("Colour"), None);
    }

    #[test]
    fn keys_match_by_prefix_from_their_shortest_form() {
        assert_eq!(job_key("TimeLimit"), Some("TimeLimit"));
        assert_eq!(job_key("timel"), Some("TimeLimit"));
        assert_eq!(job_key("Time"), None);
        assert_eq!(job_key("Name"), Some("JobName"));
        assert_eq!(job_key("JobName"), Some("JobName"));
        assert_eq!(job_key("EligibleTime"), Some("StartTime"));
        assert_eq!(job_key("StartTime"), Some("StartTime"));
        assert_eq!(job_key("Partition"), Some("Partition"));
        assert_eq!(job_key("NoSuchKey"), None);
        assert_eq!(job_key("BeginTime"), None);
        assert_eq!(job_key("TimeLimits"), None);
        assert_eq!(node_key("State"), Some("State"));
        assert_eq!(node_key("reason"), Some("Reason"));
        assert_eq!(node_key("NoSuchKey"), None);
    }
}
