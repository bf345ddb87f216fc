//! The slurm.conf keys Sluice knows: those it acts on and those it accepts without
//! effect (so that an operator's file loads without noise). Anything else draws a
//! warning naming the file and line. Lists follow `slurm.conf(5)` of Slurm 22.05.

/// Global keys (lower-case) Sluice accepts.
pub const GLOBAL: &[&str] = &[
    "accountingstorageenforce", "accountingstoragehost", "accountingstorageloc",
    "accountingstoragepass", "accountingstorageport", "accountingstoragetres",
    "accountingstoragetype", "accountingstorageuser", "accountingstoreflags",
    "acctgatherenergytype", "acctgatherfilesystemtype", "acctgatherinterconnecttype",
    "acctgathernodefreq", "acctgatherprofiletype", "allowspecresourcesusage",
    "authalttypes", "authinfo", "authtype", "batchstarttimeout", "burstbuffertype",
    "clifilterplugins", "clustername", "communicationparameters", "completewait",
    "corespecplugin", "cpufreqdef", "cpufreqgovernors", "credtype", "debugflags",
    "defcpupergpu", "defmempercpu", "defmempergpu", "defmempernode", "dependencyparameters",
    "disablerootjobs", "eiotimeout", "enforcepartlimits", "epilog", "epilogmsgtime",
    "epilogslurmctld", "extsensorsfreq", "extsensorstype", "fairsharedampeningfactor",
    "federationparameters", "firstjobid", "getenvtimeout", "grestypes", "groupupdateforce",
    "groupupdatetime", "gpufreqdef", "healthcheckinterval", "healthchecknodestate",
    "healthcheckprogram", "inactivelimit", "interactivestepoptions", "jobacctgatherfrequency",
    "jobacctgathertype", "jobacctgatherparams", "jobcomphost", "jobcomploc", "jobcomppass",
    "jobcompport", "jobcomptype", "jobcompuser", "jobcontainertype", "jobfileappend",
    "jobrequeue", "jobsubmitplugins", "keepalivetime", "killonbadexit", "killwait",
    "launchparameters", "launchtype", "licenses", "logtimeformat", "mailprog",
    "maxarraysize", "maxdbdmsgs", "maxjobcount", "maxjobid", "maxmempercpu",
    "maxmempernode", "maxnodecount", "maxstepcount", "maxtaskspernode", "mcsparameters",
    "mcsplugin", "messagetimeout", "minjobage", "mpidefault", "mpiparams", "nodefeaturesplugins",
    "overtimelimit", "plugindir", "plugstackconfig", "powerparameters", "powerplugin",
    "preemptexempttime", "preemptmode", "preempttype", "preemptparameters", "prepparameters",
    "prepplugins", "priorityparameters", "prioritycalcperiod", "prioritydecayhalflife",
    "priorityfavorsmall", "priorityflags", "prioritymaxage", "prioritysiteplugins",
    "prioritytype", "priorityusageresetperiod", "priorityweightage",
    "priorityweightassoc", "priorityweightfairshare", "priorityweightjobsize",
    "priorityweightpartition", "priorityweightqos", "priorityweighttres",
    "privatedata", "proctracktype", "prolog", "prologepilogtimeout", "prologflags",
    "prologslurmctld", "propagateprioprocess", "propagateresourcelimits",
    "propagateresourcelimitsexcept", "rebootprogram", "reconfigflags",
    "requeueexit", "requeueexithold", "resumefailprogram", "resumeprogram",
    "resumerate", "resumetimeout", "resvepilog", "resvoverrun", "resvprolog",
    "returntoservice", "routeplugin", "schedulerparameters", "schedulertimeslice",
    "schedulertype", "scronparameters", "selecttype", "selecttypeparameters",
    "slurmctldaddr", "slurmctlddebug", "slurmctldhost", "slurmctldlogfile",
    "slurmctldparameters", "slurmctldpidfile", "slurmctldport", "slurmctldprimaryoffprog",
    "slurmctldprimaryonprog", "slurmctldsyslogdebug", "slurmctldtimeout", "slurmddebug",
    "slurmdlogfile", "slurmdparameters", "slurmdpidfile", "slurmdport", "slurmdspooldir",
    "slurmdsyslogdebug", "slurmdtimeout", "slurmduser", "slurmschedlogfile",
    "slurmschedloglevel", "slurmuser", "srunepilog", "srunportrange", "srunprolog",
    "statesavelocation", "suspendexcnodes", "suspendexcparts", "suspendprogram",
    "suspendrate", "suspendtime", "suspendtimeout", "switchparameters", "switchtype",
    "taskepilog", "taskplugin", "taskpluginparam", "taskprolog", "tcptimeout",
    "tmpfs", "topologyparam", "topologyplugin", "trackwckey", "treewidth",
    "unkillablestepprogram", "unkillablesteptimeout", "usepam", "vsizefactor",
    "waittime", "x11parameters", "controlmachine", "controladdr", "backupcontroller",
    "backupaddr", "cachegroups", "fastschedule", "maxsteps",
];

/// `NodeName=` line keys (lower-case) Sluice accepts.
pub const NODE: &[&str] = &[
    "nodename", "nodehostname", "nodeaddr", "bcastaddr", "boards", "corespeccount",
    "corespersocket", "cpubind", "cpus", "cpuspeclist", "features", "feature", "gres",
    "memspeclimit", "port", "procs", "realmemory", "reason", "sockets",
    "socketsperboard", "state", "threadspercore", "tmpdisk", "weight", "tres",
    "tresweights", "restrictedcorespergpu",
];

/// `PartitionName=` line keys (lower-case) Sluice accepts.
pub const PARTITION: &[&str] = &[
    "partitionname", "allocnodes", "allowaccounts", "allowgroups", "allowqos",
    "alternate", "cpubind", "default", "defaulttime", "defcpupergpu", "defmempercpu",
    "defmempergpu", "defmempernode", "denyaccounts", "denyqos", "disablerootjobs",
    "exclusiveuser", "gracetime", "hidden", "lln", "maxcpuspernode", "maxmempercpu",
    "maxmempernode", "maxnodes", "maxtime", "minnodes", "nodes", "oversubscribe",
    "overtimelimit", "preemptmode", "priorityjobfactor", "prioritytier", "qos",
    "reqresv", "resumetimeout", "rootonly", "selecttypeparameters", "shared", "state",
    "suspendtime", "suspendtimeout", "tresbillingweights",
];

/// `SchedulerParameters=` options Sluice accepts without acting on them.
pub const SCHEDULER_PARAMETERS_ACCEPTED: &[&str] = &[
    "allow_zero_lic", "assoc_limit_stop", "batch_sched_delay", "bb_array_stage_cnt",
    "bf_busy_nodes", "bf_hetjob_immediate", "bf_hetjob_prio", "bf_ignore_newly_avail_nodes",
    "bf_job_part_count_reserve", "bf_licenses", "bf_max_job_array_resv", "bf_max_job_assoc",
    "bf_max_job_part", "bf_max_job_start", "bf_max_job_user", "bf_max_job_user_part",
    "bf_max_time", "bf_min_age_reserve", "bf_min_prio_reserve", "bf_node_space_size",
    "bf_one_resv_per_job", "bf_running_job_reserve", "bf_yield_interval", "bf_yield_sleep",
    "build_queue_timeout", "default_queue_depth", "defer", "delay_boot",
    "disable_job_shrink", "disable_hetjob_steps", "enable_hetjob_steps",
    "enable_user_top", "extra_constraints", "ignore_numa", "inventory_interval",
    "kill_invalid_depend", "max_array_tasks", "max_depend_depth", "max_rpc_cnt",
    "max_sched_time", "max_script_size", "max_switch_wait", "no_backup_scheduling",
    "no_env_cache", "nohold_on_prolog_fail", "pack_serial_at_end", "partition_job_depth",
    "preempt_reorder_count", "preempt_strict_order", "preempt_youngest_first",
    "reduce_completing_frag", "requeue_setup_env_fail", "salloc_wait_nodes",
    "sbatch_wait_nodes", "sched_interval", "sched_max_job_start", "sched_min_interval",
    "spec_cores_first", "step_retry_count", "step_retry_time", "whole_hetjob",
];
