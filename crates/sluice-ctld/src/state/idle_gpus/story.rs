//! The idle-GPU check, told as a story: a job holds four GPUs, three of them stay idle
//! past `IdleGpuTime`, the job is flagged once (log, audit, record, the site's command),
//! follows its GPUs as they wake, and the flag goes when all are busy.

use std::path::Path;

use sluice_core::JobId;
use sluice_proto::audit::AuditWhat;
use sluice_proto::types::{GresRequest, JobDescription, JobState, StepId};
use sluice_proto::usage::{GpuUsage, IdleGpus, StepUsage, UsageReport};

use crate::config::ClusterConfig;
use crate::state::tests::{alice, root};
use crate::state::{Controller, Effect};

/// One node of four GPUs; idle under 5 % for 30 minutes; `command` run when flagged.
fn cluster(cancel: bool) -> Controller {
    let text = "ClusterName=g\nGresTypes=gpu\n\
                NodeName=g1 CPUs=8 RealMemory=8000 Gres=gpu:4\n\
                PartitionName=gpu Nodes=g1 Default=YES\n";
    let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
    let mut conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    conf.site.idle_gpu.command = Some("/usr/local/sbin/idle-gpu".into());
    conf.site.idle_gpu.cancel = cancel;
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    c.agents_up.insert("g1".into());
    c
}

/// A job of four GPUs, started at 0.
fn start_gpu_job(c: &mut Controller) -> JobId {
    let desc = JobDescription {
        name: "train".into(),
        ntasks: Some(1),
        time_limit: Some(Some(86_400)),
        work_dir: "/home/alice".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        gres: vec![GresRequest {
            name: "gpu".into(),
            gres_type: None,
            count: 4,
        }],
        ..Default::default()
    };
    let p = c.prepare(desc, &alice(), "alice", "alice", 0).unwrap();
    let jobs = p.jobs(JobId(1));
    c.accept(jobs, 0);
    c.schedule(0);
    assert_eq!(c.jobs[&JobId(1)].state, JobState::Running);
    JobId(1)
}

/// The agent's report with each GPU's utilisation now.
fn report(job: JobId, utils: [u32; 4]) -> UsageReport {
    let gpus = utils
        .iter()
        .enumerate()
        .map(|(i, u)| GpuUsage {
            node: "g1".into(),
            index: i as u32,
            samples: 1,
            util_sum: u64::from(*u),
            util_max: *u,
            util_now: *u,
            ..GpuUsage::default()
        })
        .collect();
    UsageReport {
        job: job.0,
        run: 0,
        node: "g1".into(),
        steps: vec![(
            StepId::Batch,
            StepUsage {
                tasks: 1,
                gpus,
                ..StepUsage::default()
            },
        )],
    }
}

fn flag(c: &Controller, job: JobId) -> Option<IdleGpus> {
    c.jobs[&job].idle_gpus.as_deref().copied()
}

fn notified(effects: &[Effect]) -> Vec<(String, String)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Notify { command, env } => Some((command.clone(), env.clone())),
            _ => None,
        })
        .flat_map(|(command, env)| std::iter::once(("command".to_string(), command)).chain(env))
        .collect()
}

#[test]
fn three_gpus_idle_for_half_an_hour_flag_the_job_once_until_they_work_again() {
    let mut c = cluster(false);
    let job = start_gpu_job(&mut c);
    c.take_audit();

    // GPUs 0, 1 and 3 under 5 % from minute 1; GPU 2 busy.
    let effects = c
        .usage_report(&report(job, [0, 0, 90, 4]), &root(), 60)
        .unwrap();
    assert!(effects.is_empty());
    // 29 minutes later: not yet.
    c.usage_report(&report(job, [1, 0, 95, 3]), &root(), 60 + 29 * 60)
        .unwrap();
    assert_eq!(flag(&c, job), None);
    // Half an hour after they went idle: flagged, saved, the site's command told.
    let effects = c
        .usage_report(&report(job, [0, 2, 88, 0]), &root(), 60 + 30 * 60)
        .unwrap();
    let expected = IdleGpus {
        held: 4,
        idle: 3,
        since: 60,
        threshold: 5,
    };
    assert_eq!(flag(&c, job), Some(expected));
    assert!(effects
        .iter()
        .any(|e| matches!(e, Effect::Persist(r) if r.idle_gpus == Some(expected))));
    let env = notified(&effects);
    for (k, v) in [
        ("command", "/usr/local/sbin/idle-gpu"),
        ("SLUICE_JOB_ID", "1"),
        ("SLUICE_JOB_USER", "alice"),
        ("SLUICE_JOB_NODES", "g1"),
        ("SLUICE_GPUS_HELD", "4"),
        ("SLUICE_GPUS_IDLE", "3"),
        ("SLUICE_IDLE_SINCE", "60"),
    ] {
        assert!(
            env.contains(&(k.to_string(), v.to_string())),
            "{k}={v} in {env:?}"
        );
    }
    let audit = c.take_audit();
    assert!(
        matches!(audit.as_slice(), [e] if e.what == AuditWhat::IdleGpus { gpus: expected }),
        "{audit:?}"
    );
    // What a user reads (`sluice explain`), at 42 minutes.
    assert_eq!(
        expected.describe(60 + 42 * 60),
        "holds 4 GPUs; 3 idle (under 5% utilisation) for the last 42 min"
    );
    assert_eq!(
        c.job(job).unwrap().idle_gpus,
        Some(expected),
        "in the record shown"
    );

    // Still idle: no second command, no second event.
    let effects = c
        .usage_report(&report(job, [0, 0, 90, 0]), &root(), 60 + 35 * 60)
        .unwrap();
    assert!(notified(&effects).is_empty());
    assert!(c.take_audit().is_empty());
    // GPU 3 wakes up: two idle now, still flagged, nobody told again.
    let effects = c
        .usage_report(&report(job, [0, 0, 90, 60]), &root(), 60 + 36 * 60)
        .unwrap();
    assert!(notified(&effects).is_empty());
    assert_eq!(flag(&c, job).map(|f| f.idle), Some(2));
    // All work: the flag goes.
    c.usage_report(&report(job, [70, 80, 90, 60]), &root(), 60 + 37 * 60)
        .unwrap();
    assert_eq!(flag(&c, job), None);
    // Idle again, the clock starts again from this report.
    c.usage_report(&report(job, [0, 80, 90, 60]), &root(), 60 + 38 * 60)
        .unwrap();
    c.usage_report(&report(job, [0, 80, 90, 60]), &root(), 60 + 67 * 60)
        .unwrap();
    assert_eq!(flag(&c, job), None);
    let effects = c
        .usage_report(&report(job, [0, 80, 90, 60]), &root(), 60 + 68 * 60)
        .unwrap();
    assert_eq!(
        flag(&c, job).map(|f| (f.idle, f.since)),
        Some((1, 60 + 38 * 60))
    );
    assert_eq!(
        notified(&effects).len(),
        1 + 7,
        "told again after the job worked"
    );

    // The job ends: the record forgets the flag.
    let ended = sluice_proto::types::JobEnded {
        job_id: job.0,
        run: 0,
        node: "g1".into(),
        state: JobState::Completed,
        exit_code: 0,
        signal: 0,
        end: 60 + 70 * 60,
        usage: None,
    };
    c.job_ended(&ended, 60 + 70 * 60);
    assert_eq!(flag(&c, job), None);
}

#[test]
fn with_idle_gpu_action_cancel_a_flagged_job_is_cancelled() {
    let mut c = cluster(true);
    let job = start_gpu_job(&mut c);
    c.usage_report(&report(job, [0, 0, 0, 0]), &root(), 0)
        .unwrap();
    let effects = c
        .usage_report(&report(job, [0, 0, 0, 0]), &root(), 1800)
        .unwrap();
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Terminate { job_id, state: JobState::Cancelled, .. } if *job_id == job)),
        "{effects:?}"
    );
}

#[test]
fn without_the_check_nothing_is_watched() {
    let mut c = cluster(false);
    c.conf.site.idle_gpu.after = 0;
    let job = start_gpu_job(&mut c);
    c.usage_report(&report(job, [0, 0, 0, 0]), &root(), 0)
        .unwrap();
    c.usage_report(&report(job, [0, 0, 0, 0]), &root(), 86_000)
        .unwrap();
    assert_eq!(flag(&c, job), None);
}
