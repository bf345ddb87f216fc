//! `sstat` on a running job: which steps it shows, its layouts, and its messages and
//! exit codes (as real Slurm 22.05.8's sstat, `compat/scenarios/164-sstat.scn`).

use sluice_proto::types::StepId;
use sluice_proto::usage::{Stat, StepUsage, UsageReport};

use crate::harness::Cluster;
use crate::SMALL;

#[test]
fn sstat_shows_running_steps_and_slurms_errors() {
    // No gathering: the only figures are those the test reports as an agent would.
    let conf = SMALL.replace(
        "SlurmctldHost=localhost\n",
        "SlurmctldHost=localhost\nJobAcctGatherType=jobacct_gather/none\n",
    );
    let c = Cluster::start("sstat", &conf);
    let job = c.sbatch(&["-n", "2", "-N", "1", "--wrap", "srun -n 2 sleep 60"]);
    let id = job.to_string();
    let steps = |args: &[&str]| {
        let mut all = vec!["-P", "-o", "JobID,NTasks,Nodelist"];
        all.extend_from_slice(args);
        let o = c.run("sstat", &all);
        (o.stdout, o.stderr, o.code)
    };
    // The job alone: its srun step, once it runs; -a: the batch step first.
    let header = "JobID|NTasks|Nodelist\n";
    let node = c.settle("n1", || {
        steps(&["-n", "-j", &id])
            .0
            .trim()
            .rsplit('|')
            .next()
            .unwrap_or("")
            .into()
    });
    assert!(node == "n1" || node == "n2", "{node}");
    assert_eq!(
        steps(&["-j", &id]),
        (format!("{header}{job}.0|2|{node}\n"), String::new(), 0)
    );
    assert_eq!(
        steps(&["-a", "-j", &id]).0,
        format!("{header}{job}.batch|1|{node}\n{job}.0|2|{node}\n")
    );
    assert_eq!(
        steps(&["-n", "-j", &format!("{id}.batch,{id}")]).0,
        format!("{job}.batch|1|{node}\n{job}.0|2|{node}\n")
    );
    // Columns: the header, dashes, a value under each.
    let o = c.run("sstat", &["-o", "JobID%20,NTasks", "-j", &id]);
    assert_eq!(
        o.stdout,
        format!(
            "               JobID   NTasks \n-------------------- -------- \n{:>20}        2 \n",
            format!("{job}.0")
        )
    );
    // What the agents report is what sstat shows: two tasks on the step's node, in
    // Slurm's forms (the task lists' ids as sstat prints them).
    let client =
        sluice_proto::Client::new(sluice_proto::paths::controller_socket(&c.dir.join("state")));
    let task = |rss: u64, cpu_ms: u64, t: u32| StepUsage {
        tasks: 1,
        cpu_ms: Stat::one(cpu_ms, &node, t),
        user_cpu_ms: cpu_ms,
        rss: Stat::one(rss, &node, t),
        disk_read: Stat::one(3981, &node, t),
        ..StepUsage::default()
    };
    let usage = StepUsage::merged([&task(5_181_440, 61_000, 0), &task(6_291_456, 122_000, 1)]);
    client
        .usage_report(&UsageReport {
            job,
            run: 0,
            node: node.clone(),
            steps: vec![(StepId::Number(0), usage)],
        })
        .unwrap();
    let o = c.run(
        "sstat",
        &[
            "-n",
            "-P",
            "-o",
            "JobID,MaxRSS,MaxRSSTask,MaxRSSNode,AveRSS,MinCPU,AveCPU,MaxDiskRead,TRESUsageInMaxTask",
            "-j",
            &id,
        ],
    );
    assert_eq!(
        o.stdout,
        format!(
            "{job}.0|6M|1|{node}|5602K|00:01:01|00:01:31|3981|cpu=00:00:00,fs/disk=0,mem=1,pages=0,vmem=0\n"
        ),
        "{}",
        o.stderr
    );
    // A step that does not run; a job that is no more; one never known: messages on
    // stderr after the header, and exit 0.
    assert_eq!(
        steps(&["-j", &format!("{id}.7")]),
        (
            header.into(),
            format!("sstat: error: StepId={job}.7 not found running.\n"),
            0
        )
    );
    assert_eq!(c.run("scancel", &[&id]).code, 0);
    // Ended, and no longer COMPLETING: its steps are gone.
    assert!(c.wait_ended(job).starts_with("CANCELLED"));
    assert_eq!(
        steps(&["-j", &id]),
        (
            header.into(),
            format!("sstat: error: No steps running for job {job}\n"),
            0
        )
    );
    assert_eq!(
        steps(&["-j", "999999"]),
        (
            header.into(),
            "sstat: error: couldn't get steps for job 999999\n".into(),
            0
        )
    );
    // No job, an unknown field: exit 1.
    let o = c.run("sstat", &[]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("sstat: error: You didn't give me any jobs to stat.\n", 1)
    );
    let o = c.run("sstat", &["-o", "Bogus", "-j", &id]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("sstat: error: Invalid field requested: \"Bogus\"\n", 1)
    );
}
