//! Heterogeneous allocations from the command line, as `salloc OPTS : OPTS CMD` and
//! `srun OPTS CMD : OPTS CMD` ask for them: each `:`-separated part is a component of
//! one heterogeneous job, its options taken from the part before it where Slurm
//! propagates them (`sbatch::propagated`).

use sluice_conf::options::{parse_args, Command, JobOptions};
use sluice_proto::types::{JobDescription, JobRecord};
use sluice_proto::Client;

use super::common::{describe, fail, program, Refusal, USAGE_EXIT};
use super::sbatch::{describe_job, propagated};

/// The parts of `args` split at each `:` word.
pub fn split(args: &[String]) -> Vec<Vec<String>> {
    args.split(|a| a == ":").map(<[String]>::to_vec).collect()
}

/// Parses `part` as `cmd`'s options over `opts`; the command it names. Slurm's
/// message and exit status for a bad option.
fn parse_one(cmd: Command, me: &str, part: &[String], opts: &mut JobOptions) -> Vec<String> {
    // The environment's options (`SALLOC_*`, srun's `SLURM_*`) first, for every part;
    // the command line's over them.
    let from_env = sluice_conf::input_env::read(cmd, |k| std::env::var(k).ok());
    let parsed = from_env
        .apply(cmd, opts)
        .and_then(|()| parse_args(cmd, part, opts))
        .and_then(|rest| sluice_conf::options::check_memory_kinds(opts).map(|()| rest));
    match parsed {
        Ok(r) => r,
        Err(e) if e.refused && cmd == Command::Salloc => {
            fail(me, format!("Job submit/allocate failed: {}", e.message), 1)
        }
        Err(e) => Refusal::job_option(me, &program(me), &e).exit(),
    }
}

/// `srun`'s parts: each part's options (over what the part before it passes on) and
/// its command.
pub fn srun_parts(parts: &[Vec<String>]) -> Vec<(JobOptions, Vec<String>)> {
    let mut out: Vec<(JobOptions, Vec<String>)> = Vec::with_capacity(parts.len());
    for part in parts {
        let mut opts = out
            .last()
            .map_or_else(JobOptions::default, |(prev, _)| propagated(prev));
        let argv = parse_one(Command::Srun, "srun", part, &mut opts);
        out.push((opts, argv));
    }
    out
}

/// `salloc`'s parts: options up to the first part that names a command; that command
/// takes the rest of the line, `:` words included (`salloc -n1 : -n2 srun a : b`).
pub fn salloc_parts(args: &[String]) -> (Vec<JobOptions>, Vec<String>) {
    let mut options: Vec<JobOptions> = Vec::new();
    let mut rest = args;
    loop {
        let end = rest.iter().position(|a| a == ":").unwrap_or(rest.len());
        let mut opts = options.last().map_or_else(JobOptions::default, propagated);
        let argv = parse_one(Command::Salloc, "salloc", &rest[..end], &mut opts);
        options.push(opts);
        if !argv.is_empty() || end == rest.len() {
            let mut command = argv;
            command.extend(rest[end..].iter().cloned());
            return (options, command);
        }
        rest = &rest[end + 1..];
    }
}

/// The description of an interactive heterogeneous job of `components` (leader
/// first) named `name` (each component's own `-J` over it), shown as `command`,
/// submitted by `submit_line`.
pub fn describe_het(
    me: &str,
    components: &[JobOptions],
    name: &str,
    command: &str,
    submit_line: &str,
) -> JobDescription {
    let describe_one = |o: &JobOptions| {
        let n = o.job_name.clone().unwrap_or_else(|| name.to_string());
        let mut d = describe_job(o, n, String::new(), command.to_string(), true)
            .unwrap_or_else(|e| fail(me, e, USAGE_EXIT));
        d.submit_line = Some(submit_line.to_string());
        d
    };
    let mut desc = describe_one(&components[0]);
    for c in &components[1..] {
        let mut d = describe_one(c);
        // The environment is the leader's.
        d.environment = Vec::new();
        desc.het_components.push(d);
    }
    desc
}

/// The records of every component of the heterogeneous job `leader` is, in offset
/// order (`leader` alone for any other job).
pub fn component_records(client: &Client, me: &str, leader: JobRecord) -> Vec<JobRecord> {
    let Some(h) = leader.het else {
        return vec![leader];
    };
    let mut out = vec![leader];
    for i in 1..h.size as u64 {
        let r: JobRecord = client
            .get(&format!("/v1/jobs/{}", h.job_id + i))
            .unwrap_or_else(|e| fail(me, describe(&e), 1));
        out.push(r);
    }
    out
}

/// The variables of a heterogeneous allocation's shell (`salloc`'s command), as Slurm
/// 22.05's salloc sets them: the job's id, the total task count when tasks were asked,
/// and each component's variables as `NAME_HET_GROUP_n` and `NAME_PACK_GROUP_n` (the
/// batch script's, with `SLURM_JOBID`, `SLURM_NNODES`, `SLURM_NODELIST` and
/// `SLURM_NODE_ALIASES` besides); no per-job names without a component's suffix.
pub fn salloc_variables(records: &[JobRecord], cluster: &str) -> Vec<(String, String)> {
    let leader = &records[0];
    let mut v: Vec<(String, String)> = vec![
        ("SLURM_CLUSTER_NAME".into(), cluster.to_string()),
        ("SLURM_JOB_ID".into(), leader.id.to_string()),
        (
            "SLURM_SUBMIT_DIR".into(),
            leader.desc.submit_dir().to_string(),
        ),
        ("SLURM_SUBMIT_HOST".into(), leader.desc.submit_host.clone()),
    ];
    if records
        .iter()
        .any(|r| r.desc.ntasks.is_some() || r.desc.ntasks_per_node.is_some())
    {
        let total: u32 = records.iter().map(|r| r.ntasks).sum();
        v.push(("SLURM_NTASKS".into(), total.to_string()));
        v.push(("SLURM_NPROCS".into(), total.to_string()));
    }
    v.extend(sluice_ctld::state::het_variables(records));
    for (n, r) in records.iter().enumerate() {
        let nodelist = sluice_conf::hostlist::compress(&r.nodes);
        for (name, value) in [
            ("SLURM_JOBID", r.id.to_string()),
            ("SLURM_NNODES", r.nodes.len().to_string()),
            ("SLURM_NODELIST", nodelist),
            ("SLURM_NODE_ALIASES", "(null)".to_string()),
        ] {
            v.push((format!("{name}_PACK_GROUP_{n}"), value.clone()));
            v.push((format!("{name}_HET_GROUP_{n}"), value));
        }
    }
    v
}
