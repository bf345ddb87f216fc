//! `EnforcePartLimits=ALL` on a live cluster: submissions over the partition's limits
//! are refused with exactly what real Slurm 22.05 printed (`shared/slurm-samples/
//! enforce_*.txt`, captured on one node of 2 CPUs with `MaxTime=1-00:00:00`).

use crate::harness::{self, Cluster, Output};

const CONF: &str = "ClusterName=enforce
SlurmctldHost=localhost
EnforcePartLimits=ALL
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1-00:00:00 State=UP
";

/// The command and expected output of a shared sample.
fn sample(name: &str) -> (String, Output) {
    let text = harness::reference_sample(&format!("{name}.txt"));
    let (first, body) = text.split_once('\n').unwrap();
    let at = body.rfind("--- exit ").unwrap();
    let (stdout, stderr) = match body[..at].split_once("--- stderr\n") {
        Some((o, e)) => (o.to_string(), e.to_string()),
        None => (body[..at].to_string(), String::new()),
    };
    let output = Output {
        stdout,
        stderr,
        code: body[at + 9..].trim().parse().unwrap(),
    };
    (first.strip_prefix("$ ").unwrap().to_string(), output)
}

#[test]
fn submissions_over_partition_limits_are_refused_as_slurm_refuses_them() {
    let c = Cluster::start_with("enforce", CONF, &["n1"]);
    for name in [
        "enforce_err_time_over_maxtime",
        "enforce_err_too_many_cpus",
        "enforce_err_too_many_cpus_per_task",
        "enforce_err_too_many_nodes",
        "enforce_err_mem_too_big",
    ] {
        let (command, expected) = sample(name);
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words[0], "sbatch");
        assert_eq!(c.run("sbatch", &words[1..]), expected, "{name}: {command}");
    }
    // Nothing was queued, and the setting shows as Slurm shows it.
    assert_eq!(c.run("squeue", &["-h"]).stdout, "");
    let (_, expected) = sample("enforce_scontrol_show_config_EnforcePartLimits");
    let config = c.run("scontrol", &["show", "config"]).stdout;
    let line: String = config
        .lines()
        .filter(|l| l.starts_with("EnforcePartLimits"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(line, expected.stdout);
}
