//! GPU accounting: typed GPU TRES tracked by `AccountingStorageTRES`, billing from a
//! partition's `TRESBillingWeights`, and `sluice report gpu`'s GPU-seconds.
//!
//! The jobs, the configuration and the expected TRES strings are those of a run of real
//! Slurm 22.05.8 on a node `Gres=gpu:a100:4` with the same settings: sacct's AllocTRES
//! sorted as text (`gres/gpu:a100=2` before `gres/gpu=2`), scontrol's `TRES=` in TRES
//! order, billing truncated (6.75 bills 6), ReqTRES untyped for an untyped request and
//! empty on steps.

use std::process::Command;

use crate::harness::Cluster;

const TYPED: &str = "ClusterName=gpuacct
SlurmctldHost=localhost
GresTypes=gpu
AccountingStorageTRES=gres/gpu,gres/gpu:a100
NodeName=g1 CPUs=8 RealMemory=8000 Gres=gpu:a100:4 State=UNKNOWN
PartitionName=gpu Nodes=g1 Default=YES MaxTime=1:00:00 State=UP TRESBillingWeights=\"CPU=1.0,Mem=0.25G,GRES/gpu=2.0\"
PartitionName=typed Nodes=g1 MaxTime=1:00:00 State=UP TRESBillingWeights=\"CPU=0.5,Mem=0.001,GRES/gpu:a100=3.3\"
";

/// `scontrol show job`'s `TRES=` value.
fn tres_of(c: &Cluster, job: u64) -> String {
    let show = c.run("scontrol", &["show", "job", &job.to_string()]).stdout;
    show.split_whitespace()
        .find_map(|w| w.strip_prefix("TRES="))
        .unwrap_or_default()
        .to_string()
}

/// Runs `sluice report gpu ARGS` against the cluster.
fn report(c: &Cluster, args: &[&str]) -> (String, i32) {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("report")
        .arg("gpu")
        .args(args)
        .env("SLUICE_STATE_DIR", c.dir.join("state"))
        .env_remove("SLUICE_CONTROLLER")
        .output()
        .unwrap();
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn typed_gpus_are_accounted_billed_and_reported() {
    let c = Cluster::start("gpuacct", TYPED);
    // Held, it shows what it asks: an untyped GPU, billed 1 + 1500/1024 * 0.25 + 2.
    let held = c.sbatch(&["-H", "--gpus=1", "--mem=1500M", "--wrap", "true"]);
    assert_eq!(
        tres_of(&c, held),
        "cpu=1,mem=1500M,node=1,billing=3,gres/gpu=1"
    );
    assert_eq!(c.run("scancel", &[&held.to_string()]).code, 0);

    // 2 + 3 * 0.25 + 2 * 2 = 6.75 bills 6; 3.37 bills 3; 0.5 + 1.024 + 3.3 bills 4.
    let two = c.sbatch(&[
        "--gres=gpu:a100:2",
        "-c",
        "2",
        "--mem=3G",
        "--wrap",
        "sleep 3",
    ]);
    let one = c.sbatch(&["--gpus=1", "--mem=1500M", "--wrap", "sleep 1"]);
    let typed = c.sbatch(&[
        "-p",
        "typed",
        "--gres=gpu:a100:1",
        "--mem=1G",
        "--wrap",
        "sleep 2",
    ]);
    c.wait_for("the first job to start", || c.state(two) != "PENDING");
    assert_eq!(
        tres_of(&c, two),
        "cpu=2,mem=3G,node=1,billing=6,gres/gpu=2,gres/gpu:a100=2"
    );
    for job in [two, one, typed] {
        assert_eq!(c.wait_ended(job), "COMPLETED", "job {job}");
    }
    // The untyped request got an A100: typed in what it holds, not in what it asked.
    assert_eq!(
        tres_of(&c, one),
        "cpu=1,mem=1500M,node=1,billing=3,gres/gpu=1,gres/gpu:a100=1"
    );
    let ids = format!("{two},{one},{typed}");
    let o = c.run(
        "sacct",
        &["-n", "-P", "-o", "JobID,ReqTRES,AllocTRES", "-j", &ids],
    );
    assert_eq!(
        o.stdout,
        format!(
            "{two}|billing=6,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=3G,node=1|billing=6,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=3G,node=1\n\
             {two}.batch||cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=3G,node=1\n\
             {one}|billing=3,cpu=1,gres/gpu=1,mem=1500M,node=1|billing=3,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1500M,node=1\n\
             {one}.batch||cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1500M,node=1\n\
             {typed}|billing=4,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1G,node=1|billing=4,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1G,node=1\n\
             {typed}.batch||cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1G,node=1\n"
        )
    );
    // Slurm 22.05 removed the GRES fields.
    let o = c.run("sacct", &["-P", "-o", "JobID,AllocGRES", "-j", &ids]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "",
            "sacct: fatal: AllocGRES has been removed, please use AllocTRES\n",
            1
        )
    );

    // GPU-seconds and billing-seconds: the TRES above times each job's ElapsedRaw.
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-X",
            "-P",
            "-o",
            "User,Account,ElapsedRaw",
            "-j",
            &ids,
        ],
    );
    let rows: Vec<Vec<String>> = o
        .stdout
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 3, "{}", o.stdout);
    let (user, account) = (rows[0][0].clone(), rows[0][1].clone());
    let secs: Vec<u64> = rows.iter().map(|r| r[2].parse().unwrap()).collect();
    assert!(secs[0] >= 3, "sleep 3 ran {} s", secs[0]);
    let gpu_seconds = 2 * secs[0] + secs[1] + secs[2];
    let billing_seconds = 6 * secs[0] + 3 * secs[1] + 4 * secs[2];
    let (out, code) = report(&c, &["--parsable"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!(
            "User|Account|Jobs|GPUSeconds|GPUSeconds:a100|BillingSeconds\n\
             {user}|{account}|3|{gpu_seconds}|{gpu_seconds}|{billing_seconds}\n"
        )
    );
    let (out, _) = report(&c, &["--json", "--user", &user, "--account", &account]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["usage"][0]["gpu_seconds"], gpu_seconds);
    assert_eq!(v["usage"][0]["gpu_seconds_by_type"]["a100"], gpu_seconds);
    assert_eq!(v["usage"][0]["billing_seconds"], billing_seconds);
    let (out, _) = report(&c, &["-P", "--user", "nobody-else"]);
    assert_eq!(out, "User|Account|Jobs|GPUSeconds|BillingSeconds\n");
    let (out, _) = report(&c, &["-P", "--since", "now+1hour", "--until", "now+2hours"]);
    assert_eq!(out, "User|Account|Jobs|GPUSeconds|BillingSeconds\n");
    let (out, _) = report(&c, &[]);
    assert!(
        out.contains(&format!(" {gpu_seconds} ┆")),
        "the table shows the GPU-seconds: {out}"
    );
}
