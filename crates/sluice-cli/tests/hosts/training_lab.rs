//! Training that survives a node, on the seeds' lab: `slurmctld` on `head01`, agents on
//! the train partition's `node01`–`node03` (the seeds' slurm.conf with
//! `SlurmdTimeout=10`, `KillWait=2` and `ReturnToService=1`). The job is the seeds'
//! script, with `#SBATCH --requeue` added, two tasks per node instead of eight, and
//! `python -m torch.distributed.run` replaced by `examples/training/trainer.py`, a
//! stand-in taking the same arguments: each task a launcher (torchrun's elastic agent)
//! of one worker; the workers step in lockstep (a collective per step, over the shared
//! home) and rank 0 saves a checkpoint there after every step.
//!
//! - A host of the job is killed (its processes and its link, as a power cut): the job
//!   is requeued, runs again with `SLURM_RESTART_COUNT=1` on the two hosts left, its
//!   copy on the surviving host killed, and resumes from the step after its checkpoint.
//!   `sacct -D` shows both runs, the first `NODE_FAIL`. The time from the death to the
//!   training running again is printed (`--nocapture`).
//! - With no other host free, the requeued job waits, `sluice explain` says for what,
//!   and it runs when the host is back.
//! - A worker that dies is restarted by its launcher (`--max-restarts`) inside the job:
//!   the job is not requeued.

use std::time::{Duration, Instant, SystemTime};

use crate::harness::Hosts;
use crate::seeds_lab::{
    as_root, here, job_ended, lay_out, read, seed, start_cluster, submit, user_sh, wait_for,
    Daemons, BIN, ETC, WORK,
};

/// The stand-in trainer, as the lab's user keeps it in their directory.
const TRAINER: &str = include_str!("../../../../examples/training/trainer.py");

/// The lab's configuration beyond the seeds': a dead host is found within seconds, and a
/// node that was down for not responding takes work again when its agent is back.
const EXTRA: &str = "SlurmdTimeout=10\nKillWait=2\nReturnToService=1\n";

/// Where the workers keep their checkpoints and step records (the shared home).
const CKPT: &str = "/home/lab/ckpt";

/// The seeds' job script made a training job of the lab: requeueable, two tasks per
/// node, the stand-in trainer (with `launcher` more of torchrun's options) for torchrun,
/// `train` the training script's options.
fn job_script(launcher: &str, train: &str) -> String {
    let script = seed("seed-job.sh");
    for part in [
        "#SBATCH --ntasks-per-node=8\n",
        "#SBATCH --output=logs/%j.out\n",
        "srun python -m torch.distributed.run \\\n",
        "--nproc-per-node=8 \\\n",
        "train.py --config configs/qwen72b.yaml\n",
    ] {
        assert!(script.contains(part), "the seeds' script has no {part:?}");
    }
    script
        .replace(
            "#SBATCH --ntasks-per-node=8\n",
            "#SBATCH --ntasks-per-node=2\n",
        )
        .replace(
            "#SBATCH --output=logs/%j.out\n",
            "#SBATCH --output=logs/%j.out\n#SBATCH --requeue\n",
        )
        .replace(
            "srun python -m torch.distributed.run \\\n",
            "srun python3 /home/lab/trainer.py \\\n",
        )
        .replace(
            "--nproc-per-node=8 \\\n",
            &format!("--nproc-per-node=8 {launcher}\\\n"),
        )
        .replace(
            "train.py --config configs/qwen72b.yaml\n",
            &format!("train.py --config configs/qwen72b.yaml --checkpoint-dir={CKPT} {train}\n"),
        )
}

/// Brings up the lab with agents on `nodes`, the trainer and `script` in the user's
/// directory; the lab and its daemons' guard are the caller's.
fn lab(test: &str, hosts: &[&str], nodes: &[&str], script: &str) -> Option<Hosts> {
    let h = Hosts::up_or_skip(test, hosts)?;
    lay_out(&h, EXTRA);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_sluice"), here(&h, BIN).join("sluice")).unwrap();
    let work = here(&h, WORK);
    std::fs::write(work.join("trainer.py"), TRAINER).unwrap();
    std::fs::write(work.join("job.sh"), script).unwrap();
    std::fs::create_dir_all(work.join("logs")).unwrap();
    nix::unistd::chown(
        &work.join("logs"),
        Some(nix::unistd::Uid::from_raw(65534)),
        Some(nix::unistd::Gid::from_raw(65534)),
    )
    .unwrap();
    start_cluster(&h, nodes);
    Some(h)
}

/// Seconds since midnight (UTC, as the daemons' logs have it) of `t`.
fn seconds_of_day(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        % 86_400.0
}

/// When the first line of `log` holding `text` was written, in seconds since midnight.
fn logged_at(log: &str, text: &str) -> Option<f64> {
    let line = log.lines().find(|l| l.contains(text))?;
    let time = line
        .strip_prefix('[')?
        .split(']')
        .next()?
        .split('T')
        .nth(1)?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// The newest checkpoint's step.
fn checkpoint(h: &Hosts) -> Option<u32> {
    read(&here(h, CKPT).join("checkpoint")).trim().parse().ok()
}

/// The `start step S restart R` lines of the job's output: (rank, host, S, R).
fn starts(out: &str) -> Vec<(u32, String, u32, u32)> {
    out.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            match w.as_slice() {
                ["rank", rank, "on", host, "start", "step", s, "restart", r] => Some((
                    rank.parse().ok()?,
                    host.trim_end_matches(':').to_string(),
                    s.parse().ok()?,
                    r.parse().ok()?,
                )),
                _ => None,
            }
        })
        .collect()
}

/// The trainer's worker processes on `host` (the lab's hosts share this machine's pid
/// space: only the host's own are looked at).
fn workers_on(h: &Hosts, host: &str) -> usize {
    h.processes(host)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    let c = String::from_utf8_lossy(&c).into_owned();
                    c.contains("trainer.py") && c.contains("--worker")
                })
                .unwrap_or(false)
        })
        .count()
}

/// `sacct -D -X` of the job: `JobID|NodeList|State` of each run.
fn runs(h: &Hosts, job: u64) -> String {
    let o = as_root(
        h,
        "head01",
        "sacct",
        &[
            "-D",
            "-X",
            "-n",
            "-P",
            "-o",
            "JobID,NodeList,State",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
}

/// `scontrol show job`'s `RestartCnt`.
fn restart_count(h: &Hosts, job: u64) -> String {
    let o = as_root(h, "head01", "scontrol", &["show", "job", &job.to_string()]);
    o.stdout
        .split_whitespace()
        .find_map(|w| {
            w.strip_prefix("Restarts=")
                .or(w.strip_prefix("RestartCnt="))
        })
        .unwrap_or_default()
        .to_string()
}

fn output(h: &Hosts, job: u64) -> String {
    read(&here(h, WORK).join(format!("logs/{job}.out")))
}

/// Waits for the job's workers to have checkpointed step `step`.
fn wait_checkpoint(h: &Hosts, step: u32) {
    wait_for(Duration::from_secs(60), "a checkpoint", || {
        (checkpoint(h) >= Some(step)).then_some(())
    });
}

#[test]
fn a_training_job_whose_host_dies_is_requeued_on_the_hosts_left_and_resumes_from_its_checkpoint() {
    let test = "a_training_job_whose_host_dies_is_requeued_on_the_hosts_left";
    let script = job_script("", "--steps=40 --step-seconds=0.25");
    let Some(h) = lab(
        test,
        &["head01", "node[01-03]"],
        &["node01", "node02", "node03"],
        &script,
    ) else {
        return;
    };
    let daemons = Daemons(&h);
    let job = submit(&h, "node01", "job.sh");
    wait_checkpoint(&h, 4);
    let out = output(&h, job);
    let mut first = starts(&out);
    first.sort();
    let expect: Vec<_> = (0..4)
        .map(|r| (r, if r < 2 { "node01" } else { "node02" }.to_string(), 0, 0))
        .collect();
    assert_eq!(first, expect, "{out}");

    // node02, the job's second host, dies: the ranks left on node01 stall in their
    // collective, and the checkpoint stays where it was.
    let killed = Instant::now();
    let killed_at = seconds_of_day(SystemTime::now());
    h.kill("node02");
    std::thread::sleep(Duration::from_secs(1));
    let saved = checkpoint(&h).expect("a checkpoint");
    assert!(saved >= 4, "checkpoint {saved}");

    // Requeued once node02 is found dead; run 1 starts on node01 and node03.
    let again = wait_for(Duration::from_secs(60), "the second run's start", || {
        (starts(&output(&h, job)).iter().filter(|s| s.3 == 1).count() == 4)
            .then(|| killed.elapsed())
    });
    let ctld_log = read(&h.spool("head01").join("slurmctld/slurmctld.log"));
    let after = |text: &str| {
        logged_at(&ctld_log, text).map_or("?".to_string(), |t| format!("{:.1}", t - killed_at))
    };
    eprintln!(
        "training job {job}: host node02 killed; not responding after {} s, DOWN after {} s, \
         requeued job started after {} s, all 4 ranks training again after {:.1} s \
         (SlurmdTimeout=10)",
        after("Node node02 not responding"),
        after("Nodes node02 not responding, setting DOWN"),
        after(&format!("sched: Allocate JobId={job} NodeList=node[01,03]")),
        again.as_secs_f64()
    );
    assert_eq!(restart_count(&h, job), "1");
    // The first run's copy on node01, whose ranks hung on their dead peers, was ended
    // (its batch script's end reported) before the second was launched there; only run
    // 1's two workers run there.
    assert_eq!(workers_on(&h, "node01"), 2);
    let agent_log = read(&h.spool("node01").join("slurmd/slurmd.log"));
    let ended = agent_log.find(&format!("[{job}.batch] done with job: REQUEUED"));
    let relaunched = agent_log.find(&format!("slurmstepd (sluice) for job {job} run 1 started"));
    assert!(
        ended.is_some() && relaunched.is_some() && ended < relaunched,
        "{agent_log}"
    );

    let state = job_ended(&h, job, Duration::from_secs(60));
    let out = output(&h, job);
    assert_eq!(state, "COMPLETED|0:0", "{out}");
    // Every rank of run 1 resumed at the step after the checkpoint, not at 0.
    let mut second: Vec<_> = starts(&out).into_iter().filter(|s| s.3 == 1).collect();
    second.sort();
    let expect: Vec<_> = (0..4)
        .map(|r| {
            (
                r,
                if r < 2 { "node01" } else { "node03" }.to_string(),
                saved + 1,
                1,
            )
        })
        .collect();
    assert_eq!(second, expect, "{out}");
    assert!(
        out.contains("rank 0 on node01: step 39 restart 1\n"),
        "{out}"
    );
    assert_eq!(
        runs(&h, job),
        format!("{job}|node[01-02]|NODE_FAIL\n{job}|node[01,03]|COMPLETED\n")
    );
    // With its steps: those of the lost run ended with it.
    let o = as_root(
        &h,
        "head01",
        "sacct",
        &[
            "-D",
            "-n",
            "-P",
            "-o",
            "JobID,NodeList,State",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(
        o.stdout,
        format!(
            "{job}|node[01-02]|NODE_FAIL\n{job}.batch|node01|CANCELLED\n\
             {job}.0|node[01-02]|CANCELLED\n{job}|node[01,03]|COMPLETED\n\
             {job}.batch|node01|COMPLETED\n{job}.0|node[01,03]|COMPLETED\n"
        )
    );
    drop(daemons);
    h.down().unwrap();
}

#[test]
fn a_requeued_training_job_with_no_host_free_waits_says_why_and_runs_when_the_host_returns() {
    let test = "a_requeued_training_job_with_no_host_free_waits_says_why";
    let script = job_script("", "--steps=24 --step-seconds=0.25");
    // node03 has no host: the train partition has two nodes that can run.
    let Some(h) = lab(
        test,
        &["head01", "node01", "node02"],
        &["node01", "node02"],
        &script,
    ) else {
        return;
    };
    let daemons = Daemons(&h);
    let job = submit(&h, "node01", "job.sh");
    wait_checkpoint(&h, 4);
    h.kill("node02");
    std::thread::sleep(Duration::from_secs(1));
    let saved = checkpoint(&h).expect("a checkpoint");

    // Requeued, it is COMPLETING until its processes on node01 (the surviving host) are
    // gone (node02, DOWN, is not waited for); then it waits: squeue and explain say for
    // what.
    wait_for(Duration::from_secs(40), "the job requeued", || {
        (restart_count(&h, job) == "1").then_some(())
    });
    let why = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher \
               priority partitions";
    let o = wait_for(Duration::from_secs(20), "the job pending again", || {
        let o = user_sh(&h, "node01", &format!("squeue -h -j {job} -o '%T|%r'"));
        (!o.stdout.starts_with("COMPLETING|")).then_some(o)
    });
    assert_eq!(o.stdout, format!("PENDING|{why}\n"), "{}", o.stderr);
    let o = user_sh(&h, "node01", &format!("sluice explain {job}"));
    assert_eq!(o.code, 0, "{}", o.stderr);
    for line in [
        format!("Job {job}: PENDING ({why})\n"),
        "Why it waits:\n".to_string(),
        "the nodes of partition train it could use are down, drained or taken by jobs of \
         higher-priority partitions"
            .to_string(),
        "  node01       could start it now\n".to_string(),
        "  node[02-03]  DOWN, reason 'Not responding'\n".to_string(),
    ] {
        assert!(o.stdout.contains(&line), "no {line:?} in\n{}", o.stdout);
    }

    // node02 comes back: its agent registers, the node takes work, the job runs again
    // there and resumes.
    // (The script itself: the daemons' guard holds the lab, and a started host's new
    // namespaces are its own to tear down.)
    let o = crate::harness::script(&["-i", &h.id().to_string(), "start", "node02"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let conf = format!("{ETC}/slurm.conf");
    let o = h.run(
        "node02",
        &[&format!("{BIN}/slurmd"), "-f", &conf, "-N", "node02"],
    );
    assert_eq!(o.code, 0, "slurmd on node02: {}{}", o.stdout, o.stderr);
    let state = job_ended(&h, job, Duration::from_secs(60));
    let out = output(&h, job);
    assert_eq!(state, "COMPLETED|0:0", "{out}");
    let mut second: Vec<_> = starts(&out).into_iter().filter(|s| s.3 == 1).collect();
    second.sort();
    assert_eq!(
        second.iter().map(|s| s.2).collect::<Vec<_>>(),
        vec![saved + 1; 4],
        "{out}"
    );
    assert_eq!(
        runs(&h, job),
        format!("{job}|node[01-02]|NODE_FAIL\n{job}|node[01-02]|COMPLETED\n")
    );
    drop(daemons);
    h.down().unwrap();
}

#[test]
fn a_worker_that_dies_is_restarted_by_its_launcher_and_the_job_is_not_requeued() {
    let test = "a_worker_that_dies_is_restarted_by_its_launcher";
    let script = job_script(
        "--max-restarts=3 ",
        "--steps=16 --step-seconds=0.25 --die-once-at=2:4",
    );
    let Some(h) = lab(
        test,
        &["head01", "node01", "node02"],
        &["node01", "node02"],
        &script,
    ) else {
        return;
    };
    let daemons = Daemons(&h);
    let job = submit(&h, "node01", "job.sh");
    let state = job_ended(&h, job, Duration::from_secs(60));
    let out = output(&h, job);
    assert_eq!(state, "COMPLETED|0:0", "{out}");
    assert!(out.contains("rank 2 on node02: dying at step 4\n"), "{out}");
    assert!(
        out.contains("launcher of rank 2: worker failed (-9), restart 1 of 3\n"),
        "{out}"
    );
    // Rank 2's worker started twice, the second time at the step after the checkpoint
    // (step 3, saved once every rank had done it); all in the job's first run.
    let rank2: Vec<_> = starts(&out).into_iter().filter(|s| s.0 == 2).collect();
    assert_eq!(
        rank2,
        vec![
            (2, "node02".to_string(), 0, 0),
            (2, "node02".to_string(), 4, 0)
        ],
        "{out}"
    );
    assert!(
        out.contains("rank 2 on node02: step 15 restart 0\n"),
        "{out}"
    );
    assert_eq!(runs(&h, job), format!("{job}|node[01-02]|COMPLETED\n"));
    let o = as_root(
        &h,
        "head01",
        "sacct",
        &[
            "-D",
            "-n",
            "-P",
            "-o",
            "JobID,State",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(
        o.stdout,
        format!("{job}|COMPLETED\n{job}.batch|COMPLETED\n{job}.0|COMPLETED\n")
    );
    assert_eq!(restart_count(&h, job), "0");
    drop(daemons);
    h.down().unwrap();
}
