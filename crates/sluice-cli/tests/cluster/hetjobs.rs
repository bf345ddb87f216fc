//! Heterogeneous jobs: components of their own shapes, started together on their own
//! nodes, listed as `ID+N`, with each component's variables in the batch script.

use crate::harness::Cluster;
use crate::SMALL;

#[test]
fn a_hetjob_waits_whole_then_runs_its_components_together_with_their_variables() {
    let c = Cluster::start("hetjob", SMALL);
    // One node taken whole: a hetjob of two whole-node components cannot start, though
    // its first component alone would fit on the other node.
    let blocker = c.sbatch(&["-J", "block", "-c", "2", "-t", "5", "--wrap", "sleep 600"]);
    c.wait_for("the blocker to run", || {
        c.run("squeue", &["-h", "-o", "%t", "-j", &blocker.to_string()])
            .stdout
            .trim()
            == "R"
    });
    std::fs::write(
        c.work().join("het.sh"),
        "#!/bin/bash\n\
         #SBATCH -J het -c 2 -t 2\n\
         #SBATCH hetjob\n\
         #SBATCH -c 2\n\
         env | grep -E '^SLURM_(HET_SIZE|PACK_SIZE|JOB_ID|JOB_NODELIST|JOB_NUM_NODES)' \
         | sort > het-env.out\n\
         srun --het-group=1 bash -c 'echo one $SLURMD_NODENAME $SLURM_JOB_ID' > het-steps.out\n\
         srun --het-group=0,1 bash -c 'echo both $SLURMD_NODENAME' | sort >> het-steps.out\n\
         srun bash -c 'echo default $SLURMD_NODENAME' >> het-steps.out\n\
         srun --het-group=2 true 2>> het-steps.out; echo \"exit $?\" >> het-steps.out\n",
    )
    .unwrap();
    let het = c.sbatch(&["het.sh"]);
    let pending = format!("{het}+1 het PD (Resources)\n{het}+0 het PD (Resources)\n");
    let squeue = || {
        c.run(
            "squeue",
            &["-h", "-o", "%i %j %t %R", "-j", &het.to_string()],
        )
        .stdout
    };
    let mut shown = c.settle(&pending, squeue);
    // The order of equal lines is the listing's; compare as sets.
    let sorted = |s: &str| {
        let mut l: Vec<String> = s.lines().map(str::to_string).collect();
        l.sort();
        l
    };
    assert_eq!(sorted(&shown), sorted(&pending), "{shown}");
    let show = c.run("scontrol", &["show", "job", &het.to_string()]).stdout;
    assert!(
        show.contains(&format!(
            "JobId={het} HetJobId={het} HetJobOffset=0 JobName=het\n   HetJobIdSet={het}-{}\n",
            het + 1
        )),
        "{show}"
    );
    assert!(
        show.contains(&format!(
            "JobId={} HetJobId={het} HetJobOffset=1 JobName=het\n",
            het + 1
        )),
        "{show}"
    );

    // sluice explain names the component the job waits for: the second, which cannot
    // fit beside the first.
    let o = c.run("sluice", &["explain", "--json", &het.to_string()]);
    let x: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let het_cause = x["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["family"] == "hetjob")
        .unwrap_or_else(|| panic!("{}", o.stdout));
    assert_eq!(
        het_cause["text"],
        format!(
            "heterogeneous job {het}: its 2 components start together, and component \
             {het}+1 does not fit now beside the others"
        )
    );
    // A pending component alone may not be cancelled, by either name.
    for named in [format!("{het}+1"), (het + 1).to_string()] {
        let o = c.run("scancel", &[&named]);
        assert_eq!(
            (o.code, o.stderr.as_str()),
            (
                60,
                format!(
                    "scancel: error: Kill job error on job id {named}: Operation not permitted \
                     on individual component of heterogeneous job\n"
                )
                .as_str()
            )
        );
    }
    assert_eq!(sorted(&squeue()), sorted(&pending));
    c.run("scancel", &[&blocker.to_string()]);
    c.wait_for("the hetjob to end", || {
        shown = squeue();
        shown.is_empty()
    });
    let env = std::fs::read_to_string(c.work().join("het-env.out")).unwrap();
    let lines: Vec<&str> = env.lines().collect();
    let value = |name: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} missing in {env}"))
            .to_string()
    };
    assert_eq!(value("SLURM_JOB_ID"), het.to_string());
    assert_eq!(value("SLURM_HET_SIZE"), "2");
    assert_eq!(value("SLURM_PACK_SIZE"), "2");
    assert_eq!(value("SLURM_JOB_ID_HET_GROUP_0"), het.to_string());
    assert_eq!(value("SLURM_JOB_ID_HET_GROUP_1"), (het + 1).to_string());
    assert_eq!(value("SLURM_JOB_ID_PACK_GROUP_1"), (het + 1).to_string());
    assert_eq!(value("SLURM_JOB_NUM_NODES_HET_GROUP_1"), "1");
    // Two whole nodes: one each, the script on the leader's.
    let (n0, n1) = (
        value("SLURM_JOB_NODELIST_HET_GROUP_0"),
        value("SLURM_JOB_NODELIST_HET_GROUP_1"),
    );
    assert_ne!(n0, n1);
    assert_eq!(value("SLURM_JOB_NODELIST"), n0);

    // Steps: in component 1, in both at once, in component 0 by default; a component
    // the job does not have is Slurm's error.
    let steps = std::fs::read_to_string(c.work().join("het-steps.out")).unwrap();
    let mut both = [format!("both {n0}"), format!("both {n1}")];
    both.sort();
    assert_eq!(
        steps,
        format!(
            "one {n1} {het}\n{}\n{}\ndefault {n0}\n\
             srun: error: Requested het-group offset exceeds highest hetjob index (2 > 1)\n\
             exit 1\n",
            both[0], both[1]
        )
    );

    let o = c.run(
        "sacct",
        &[
            "-n",
            "-X",
            "-P",
            "-o",
            "JobID,JobIDRaw,JobName,State",
            "-j",
            &het.to_string(),
        ],
    );
    // With -X too, the leader's id names every component (slurmdbd selects them by
    // their leader's id).
    assert_eq!(
        o.stdout,
        format!(
            "{het}+0|{het}|het|COMPLETED\n{het}+1|{}|het|COMPLETED\n",
            het + 1
        )
    );
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-o",
            "JobID,JobIDRaw,State",
            "-j",
            &het.to_string(),
        ],
    );
    assert!(
        o.stdout.starts_with(&format!(
            "{het}+0|{het}|COMPLETED\n{het}+0.batch|{het}.batch|COMPLETED\n"
        )) && o
            .stdout
            .contains(&format!("\n{het}+1|{}|COMPLETED\n", het + 1)),
        "{}",
        o.stdout
    );
}

#[test]
fn sbatch_takes_components_separated_by_colons_and_scancel_ends_them_all() {
    let c = Cluster::start("hetcolon", SMALL);
    let het = c.sbatch(&[
        "-J",
        "colon",
        "-n",
        "1",
        "-t",
        "5",
        ":",
        "-n",
        "2",
        "--wrap",
        "sleep 600",
    ]);
    let running = || {
        let mut l: Vec<String> = c
            .run(
                "squeue",
                &["-h", "-o", "%i %j %t %C", "-j", &het.to_string()],
            )
            .stdout
            .lines()
            .map(str::to_string)
            .collect();
        l.sort();
        l.join("\n")
    };
    let expected = format!("{het}+0 colon R 1\n{het}+1 colon R 2");
    c.wait_for("both components to run", || running() == expected);
    // `ID+1` names the component's own id.
    let show = c
        .run("scontrol", &["show", "job", &format!("{het}+1")])
        .stdout;
    assert!(
        show.starts_with(&format!("JobId={} HetJobId={het} HetJobOffset=1 ", het + 1)),
        "{show}"
    );
    // squeue --json: each component's leader, offset and the job's ids.
    let doc: serde_json::Value =
        serde_json::from_str(&c.run("squeue", &["--json"]).stdout).unwrap();
    let mut het_fields: Vec<(u64, u64, u64, String)> = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["job_id"].as_u64().unwrap(),
                j["het_job_id"].as_u64().unwrap(),
                j["het_job_offset"].as_u64().unwrap(),
                j["het_job_id_set"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    het_fields.sort();
    let set = format!("{het}-{}", het + 1);
    assert_eq!(
        het_fields,
        vec![(het, het, 0, set.clone()), (het + 1, het, 1, set)]
    );
    c.run("scancel", &[&het.to_string()]);
    c.wait_for("both components to end", || {
        c.run("squeue", &["-h", "-j", &het.to_string()])
            .stdout
            .is_empty()
    });
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-X",
            "-P",
            "-o",
            "JobID,State",
            "-j",
            &format!("{het},{}", het + 1),
        ],
    );
    assert_eq!(
        o.stdout,
        format!("{het}+0|CANCELLED by 0\n{het}+1|CANCELLED by 0\n")
    );
}

#[test]
fn a_pending_hetjob_survives_a_controller_restart_and_still_starts_whole() {
    let mut c = Cluster::start("hetrestart", SMALL);
    let blocker = c.sbatch(&["-J", "block", "-c", "2", "-t", "5", "--wrap", "sleep 600"]);
    c.wait_for("the blocker to run", || {
        c.run("squeue", &["-h", "-o", "%t", "-j", &blocker.to_string()])
            .stdout
            .trim()
            == "R"
    });
    let het = c.sbatch(&[
        "-J",
        "het",
        "-c",
        "2",
        "-t",
        "5",
        ":",
        "-c",
        "2",
        "--wrap",
        "sleep 600",
    ]);
    let listed = |c: &Cluster| {
        let mut l: Vec<String> = c
            .run("squeue", &["-h", "-o", "%i %t", "-j", &het.to_string()])
            .stdout
            .lines()
            .map(str::to_string)
            .collect();
        l.sort();
        l.join("\n")
    };
    let pending = format!("{het}+0 PD\n{het}+1 PD");
    c.wait_for("the hetjob to wait", || listed(&c) == pending);
    c.crash_and_restart_controller();
    // Read back as components, still waiting whole beside the blocker.
    c.wait_for("the hetjob to be listed again", || listed(&c) == pending);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(listed(&c), pending);
    c.run("scancel", &[&blocker.to_string()]);
    let running = format!("{het}+0 R\n{het}+1 R");
    c.wait_for("both components to start", || listed(&c) == running);
    c.run("scancel", &[&het.to_string()]);
}

#[test]
fn a_hetjob_is_requeued_whole_by_its_leader_and_sacct_selects_components_as_slurm() {
    let c = Cluster::start("hetrequeue", SMALL);
    let het = c.sbatch(&[
        "-J",
        "rq",
        "-n",
        "1",
        "-t",
        "5",
        ":",
        "-n",
        "1",
        "--wrap",
        "sleep 600",
    ]);
    let member = (het + 1).to_string();
    let states = || {
        let mut l: Vec<String> = c
            .run("squeue", &["-h", "-o", "%i %t", "-j", &het.to_string()])
            .stdout
            .lines()
            .map(str::to_string)
            .collect();
        l.sort();
        l.join("\n")
    };
    let running = format!("{het}+0 R\n{het}+1 R");
    c.wait_for("both components to run", || states() == running);

    // Only the leader's id requeues a hetjob: `ID+N` is no job id to scontrol, and a
    // component's own id is refused with Slurm's words.
    let o = c.run("scontrol", &["requeue", &format!("{het}+1")]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            1,
            format!("Invalid job id specified for job {het}+1\n").as_str()
        )
    );
    let o = c.run("scontrol", &["requeue", &member]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            1,
            format!("Job not heterogeneous job leader for job {member}\n").as_str()
        )
    );
    assert_eq!(states(), running);

    // The leader's id requeues every component; they run again together.
    let o = c.run("scontrol", &["requeue", &het.to_string()]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let restarts = || {
        c.run("scontrol", &["show", "job", &het.to_string()])
            .stdout
            .lines()
            .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("Restarts=")))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    c.wait_for("the requeued hetjob to run again, whole", || {
        states() == running && restarts() == ["Restarts=1", "Restarts=1"]
    });

    // sacct: the leader's id names every component, a component's (either name) itself;
    // --whole-hetjob=yes makes any component name all, =no only the one named.
    let sacct = |args: &[&str]| {
        let mut a = vec!["-n", "-P", "-o", "JobID"];
        a.extend_from_slice(args);
        let o = c.run("sacct", &a);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        o.stdout
            .lines()
            .filter(|l| !l.contains('.'))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (leader, plus1) = (het.to_string(), format!("{het}+1"));
    let (both, first, second) = (
        format!("{het}+0 {het}+1"),
        format!("{het}+0"),
        format!("{het}+1"),
    );
    assert_eq!(sacct(&["-j", &leader]), both);
    assert_eq!(sacct(&["-j", &plus1]), second);
    assert_eq!(sacct(&["-j", &format!("{het}+0")]), first);
    assert_eq!(sacct(&["-j", &member]), second);
    assert_eq!(sacct(&["-j", &plus1, "--whole-hetjob"]), both);
    assert_eq!(sacct(&["-j", &member, "--whole-hetjob=yes"]), both);
    assert_eq!(sacct(&["-j", &plus1, "--whole-hetjob=no"]), second);
    assert_eq!(sacct(&["-j", &leader, "--whole-hetjob=no"]), first);
    assert_eq!(sacct(&["-j", &format!("{het}+5")]), "");
    let o = c.run("sacct", &["-j", &format!("{het}+x")]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            1,
            format!("sacct: fatal: Bad hetjob offset specified: {het}\n").as_str()
        )
    );
    let o = c.run("sacct", &["-j", &leader, "--whole-hetjob=maybe"]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            1,
            "sacct: error: Invalid --whole-hetjob value \"maybe\". Valid values: [yes|no].\n"
        )
    );
    c.run("scancel", &[&leader]);
}

#[test]
fn the_components_end_with_the_leaders_script_and_their_steps_are_ended_with_them() {
    let c = Cluster::start("hetend", SMALL);
    // The script leaves a step running in component 1 and fails: every component ends
    // FAILED with the script's exit code, and the left step is ended on its node,
    // CANCELLED by SIGTERM (as real Slurm 22.05 records it).
    let het = c.sbatch(&[
        "-J",
        "hend",
        "-n",
        "1",
        "-t",
        "5",
        ":",
        "-n",
        "1",
        "--wrap",
        "srun --het-group=1 sleep 3377 & sleep 2; exit 3",
    ]);
    c.wait_for("the hetjob to end", || {
        c.run("squeue", &["-h", "-j", &het.to_string()])
            .stdout
            .is_empty()
    });
    let rows = || {
        c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,State,ExitCode",
                "-j",
                &het.to_string(),
            ],
        )
        .stdout
    };
    let expected = format!(
        "{het}+0|FAILED|3:0\n{het}+0.batch|FAILED|3:0\n{het}+1|FAILED|3:0\n{het}+1.0|CANCELLED|0:15\n"
    );
    let shown = c.settle(&expected, rows);
    assert_eq!(shown, expected);
    let reasons = c
        .run(
            "squeue",
            &["-h", "-t", "all", "-o", "%i %T %r", "-j", &het.to_string()],
        )
        .stdout;
    let mut reasons: Vec<&str> = reasons.lines().collect();
    reasons.sort();
    assert_eq!(
        reasons,
        vec![
            format!("{het}+0 FAILED NonZeroExitCode"),
            format!("{het}+1 FAILED NonZeroExitCode")
        ]
    );
    // The step's process is gone from the component's node.
    c.wait_for("the component's step to be killed", || {
        !std::process::Command::new("pgrep")
            .args(["-f", "sleep 3377"])
            .status()
            .unwrap()
            .success()
    });
}

/// One node of 2 CPUs in `low` (`PriorityTier=1`, `GraceTime=2`) and `high`
/// (`PriorityTier=10`), `preempt/partition_prio` with `REQUEUE`.
const TIERS: &str = "ClusterName=hettiers
SlurmctldHost=localhost
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=low Nodes=n1 Default=YES MaxTime=1:00:00 State=UP PriorityTier=1 GraceTime=2
PartitionName=high Nodes=n1 MaxTime=1:00:00 State=UP PriorityTier=10
";

#[test]
fn a_preempted_hetjob_is_requeued_whole_and_runs_again_whole() {
    let c = Cluster::start("hetpreempt", TIERS);
    // A low hetjob of two one-CPU components fills the node; a high job needs one CPU:
    // the whole hetjob is preempted and requeued, and runs again whole after it.
    let het = c.sbatch(&[
        "-p",
        "low",
        "-n",
        "1",
        "-o",
        "het.out",
        ":",
        "-n",
        "1",
        "--wrap",
        "echo run ${SLURM_RESTART_COUNT:-0}; sleep 600",
    ]);
    let states = || {
        let mut l: Vec<String> = c
            .run("squeue", &["-h", "-o", "%i %t", "-j", &het.to_string()])
            .stdout
            .lines()
            .map(str::to_string)
            .collect();
        l.sort();
        l.join("\n")
    };
    let running = format!("{het}+0 R\n{het}+1 R");
    c.wait_for("both components to run", || states() == running);
    let high = c.sbatch(&["-p", "high", "-n", "1", "--wrap", "sleep 2"]);
    assert_eq!(c.wait_ended(high), "COMPLETED");
    c.wait_for("the hetjob to run again, whole", || {
        states() == running
            && std::fs::read_to_string(c.work().join("het.out")).is_ok_and(|o| o.contains("run 1"))
    });
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-D",
            "-P",
            "-o",
            "JobID,State",
            "-j",
            &het.to_string(),
        ],
    );
    // Each component's preempted run is kept; the script (and its batch step) is the
    // leader's alone. Run by run, each run's components in turn, as slurmdbd keeps
    // them (scenario 225).
    assert_eq!(
        o.stdout,
        format!(
            "{het}+0|PREEMPTED\n{het}+0.batch|CANCELLED\n{het}+1|PREEMPTED\n\
             {het}+0|RUNNING\n{het}+0.batch|RUNNING\n{het}+1|RUNNING\n"
        )
    );
    c.run("scancel", &[&het.to_string()]);
}

/// The lines of `s`, sorted (the order of tasks' output is theirs).
fn sorted_lines(s: &str) -> Vec<String> {
    let mut l: Vec<String> = s.lines().map(str::to_string).collect();
    l.sort();
    l
}

#[test]
fn salloc_takes_components_separated_by_colons_and_srun_runs_one_step_over_them() {
    let c = Cluster::start("hetsalloc", SMALL);
    // One task on n1, two on n2: the shell sees the whole job and each component; an
    // `srun A : B` in it runs one step over both, its tasks numbered on from one
    // component to the next; `--het-group=0,1` too; the shell's exit code ends both.
    let show = "echo $SLURM_PROCID/$SLURM_NTASKS node $SLURM_NODEID $SLURMD_NODENAME \
                step $SLURM_STEP_ID job $SLURM_JOB_ID in $SLURM_NODELIST";
    let shell = format!(
        "echo $SLURM_JOB_ID $SLURM_HET_SIZE $SLURM_NTASKS \
         $SLURM_JOB_ID_HET_GROUP_1 $SLURM_JOB_NODELIST_HET_GROUP_0 \
         $SLURM_JOB_NODELIST_HET_GROUP_1 ${{SLURM_JOB_NODELIST:-none}}; \
         srun bash -c '{show}' : bash -c '{show}' | sort; \
         srun --het-group=0,1 -l true; exit 3"
    );
    let o = c.run(
        "salloc",
        &[
            "-J", "hx", "-w", "n1", "-n1", ":", "-w", "n2", "-n2", "bash", "-c", &shell,
        ],
    );
    let job: u64 = o
        .stdout
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{o:?}"));
    let member = job + 1;
    assert_eq!(o.code, 3, "{o:?}");
    assert_eq!(
        sorted_lines(&o.stdout),
        sorted_lines(&format!(
            "{job} 2 3 {member} n1 n2 none\n\
             0/3 node 0 n1 step 0 job {job} in n[1-2]\n\
             1/3 node 1 n2 step 0 job {job} in n[1-2]\n\
             2/3 node 1 n2 step 0 job {job} in n[1-2]\n"
        )),
        "{o:?}"
    );
    assert!(
        o.stderr
            .contains(&format!("salloc: Granted job allocation {job}\n")),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr
            .ends_with(&format!("salloc: Relinquishing job allocation {job}\n")),
        "{}",
        o.stderr
    );
    c.wait_ended(job);
    // One step id in both components: `N+0.0` and `N+1.0` are one step, as are `.1`.
    let rows = || {
        c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,JobName,State,ExitCode,NTasks,NodeList",
                "-j",
                &job.to_string(),
            ],
        )
        .stdout
    };
    let expected = format!(
        "{job}+0|hx|FAILED|3:0||n1\n\
         {job}+0.0|bash|COMPLETED|0:0|1|n1\n\
         {job}+0.1|true|COMPLETED|0:0|1|n1\n\
         {job}+1|hx|FAILED|3:0||n2\n\
         {job}+1.0|bash|COMPLETED|0:0|2|n2\n\
         {job}+1.1|true|COMPLETED|0:0|2|n2\n"
    );
    let shown = c.settle(&expected, rows);
    assert_eq!(shown, expected);
}

#[test]
fn srun_with_colons_makes_its_own_hetjob_and_each_component_ends_with_its_tasks() {
    let c = Cluster::start("hetsrun", SMALL);
    // The second component's tasks fail: its step and the job fail, the first
    // component's step completes; srun says so with the component's own task ids.
    let o = c.run(
        "srun",
        &[
            "-J",
            "hs",
            "-w",
            "n1",
            "-n1",
            "bash",
            "-c",
            "echo $SLURM_PROCID of $SLURM_NTASKS",
            ":",
            "-w",
            "n2",
            "-n2",
            "bash",
            "-c",
            "echo $SLURM_PROCID of $SLURM_NTASKS; exit 4",
        ],
    );
    assert_eq!(o.code, 4, "{o:?}");
    assert_eq!(
        sorted_lines(&o.stdout),
        ["0 of 3", "1 of 3", "2 of 3"],
        "{o:?}"
    );
    assert_eq!(
        o.stderr, "srun: error: n2: tasks 0-1: Exited with exit code 4\n",
        "{o:?}"
    );
    let o = c.run("squeue", &["-h", "-t", "all", "-n", "hs", "-o", "%i %T"]);
    let job: u64 = o
        .stdout
        .split(['+', ' ', '\n'])
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{o:?}"));
    c.wait_ended(job);
    let rows = || {
        c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,JobName,State,ExitCode,NTasks",
                "-j",
                &job.to_string(),
            ],
        )
        .stdout
    };
    let expected = format!(
        "{job}+0|hs|FAILED|4:0|\n\
         {job}+0.0|hs|COMPLETED|0:0|1\n\
         {job}+1|hs|FAILED|4:0|\n\
         {job}+1.0|hs|FAILED|4:0|2\n"
    );
    let shown = c.settle(&expected, rows);
    assert_eq!(shown, expected);
}

#[test]
fn srun_parts_run_in_the_components_order_and_more_parts_than_components_are_refused() {
    let c = Cluster::start("hetparts", SMALL);
    // Parts named by --het-group in reverse: task 0 is still the first component's.
    let shell = "srun -l --het-group=1 printenv SLURMD_NODENAME : \
                 --het-group=0 printenv SLURMD_NODENAME | sort; \
                 srun -n1 true : -n1 true : -n1 true; echo \"exit $?\"";
    let o = c.run(
        "salloc",
        &[
            "-w", "n1", "-n1", ":", "-w", "n2", "-n1", "bash", "-c", shell,
        ],
    );
    assert_eq!(o.stdout, "0: n1\n1: n2\nexit 1\n", "{o:?}");
    assert!(
        o.stderr.contains(
            "srun: error: Attempt to run a job step with het group value of 2, but the \
             job allocation has maximum value of 1\n"
        ),
        "{}",
        o.stderr
    );
    // An allocation of one node has no node left for a second part.
    let o = c.run(
        "salloc",
        &[
            "-n1",
            "bash",
            "-c",
            "srun -n1 true : -n1 true; echo \"exit $?\"",
        ],
    );
    assert_eq!(o.stdout, "exit 1\n", "{o:?}");
    assert!(
        o.stderr.contains(
            "srun: error: Allocation failure of 1 nodes: job size of 1, already \
             allocated 1 nodes to previous components.\n"
        ),
        "{}",
        o.stderr
    );
}

#[test]
fn a_heterogeneous_step_in_an_ordinary_allocation_runs_its_parts_on_nodes_of_their_own() {
    let c = Cluster::start("hetlocal", SMALL);
    // An ordinary job of two nodes (two CPUs each): `srun A : B` in its script is one
    // step, as Slurm's srun makes it. The first part's one task takes n1 alone, the
    // second part's two tasks n2; task ids count on across the parts; the tasks see an
    // ordinary step over both parts, no SLURM_HET_SIZE.
    let show = "echo $SLURM_PROCID/$SLURM_NTASKS node $SLURM_NODEID $SLURMD_NODENAME \
                step $SLURM_STEP_ID in $SLURM_NODELIST tpn $SLURM_STEP_TASKS_PER_NODE \
                het ${SLURM_HET_SIZE:-none}";
    let script = format!(
        "srun -n1 bash -c '{show}' : -n2 bash -c '{show}' | sort\n\
         srun -n1 true : -n2 false; echo \"exit $?\"\n\
         srun -n1 true : -n1 true : -n1 true; echo \"exit $?\"\n"
    );
    let job = c.sbatch(&["-J", "hl", "-N2", "-n4", "-o", "out.txt", "--wrap", &script]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let out = std::fs::read_to_string(c.work().join("out.txt")).unwrap();
    assert_eq!(
        out,
        "0/3 node 0 n1 step 0 in n[1-2] tpn 1,2 het none\n\
         1/3 node 1 n2 step 0 in n[1-2] tpn 1,2 het none\n\
         2/3 node 1 n2 step 0 in n[1-2] tpn 1,2 het none\n\
         srun: error: n2: tasks 0-1: Exited with exit code 1\n\
         exit 1\n\
         srun: error: Allocation failure of 1 nodes: job size of 2, already allocated 2 \
         nodes to previous components.\n\
         exit 1\n"
    );
    // Each part is a row of its own, `J.S+P`, ending with its own tasks; the parts of
    // a step that could not be made whole are recorded completed, as Slurm records
    // them. `-j J.1` names both parts of step 1.
    let rows = |sel: &str| {
        c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,JobName,State,ExitCode,NTasks,NodeList",
                "-j",
                sel,
            ],
        )
        .stdout
    };
    let expected = format!(
        "{job}|hl|COMPLETED|0:0||n[1-2]\n\
         {job}.batch|batch|COMPLETED|0:0|1|n1\n\
         {job}.0+0|bash|COMPLETED|0:0|1|n1\n\
         {job}.0+1|bash|COMPLETED|0:0|2|n2\n\
         {job}.1+0|true|COMPLETED|0:0|1|n1\n\
         {job}.1+1|false|FAILED|1:0|2|n2\n\
         {job}.2+0|true|COMPLETED|0:0|1|n1\n\
         {job}.2+1|true|COMPLETED|0:0|1|n2\n"
    );
    assert_eq!(c.settle(&expected, || rows(&job.to_string())), expected);
    assert_eq!(
        rows(&format!("{job}.1")),
        format!("{job}.1+0|true|COMPLETED|0:0|1|n1\n{job}.1+1|false|FAILED|1:0|2|n2\n")
    );
}
