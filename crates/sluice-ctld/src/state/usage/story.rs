//! A job's usage, told as a story: agents' samples while its steps run (what `sstat`
//! reads), their final figures with the ends, and what the step records keep (what
//! `sacct` reads).

use std::path::Path;

use sluice_proto::types::{JobEnded, JobState, StepEnded, StepId, StepRequest};
use sluice_proto::usage::{Stat, StepUsage, UsageReport};

use crate::state::tests::{alice, conf, desc, root, submit};
use crate::state::{Controller, Effect};

/// `tasks` tasks on `node` from task `first`, each with `rss` bytes and `cpu` ms.
fn figures(node: &str, first: u32, tasks: u32, rss: u64, cpu: u64) -> StepUsage {
    let mut all = StepUsage::default();
    for t in first..first + tasks {
        all.merge(&StepUsage {
            tasks: 1,
            rss: Stat::one(rss, node, t),
            cpu_ms: Stat::one(cpu, node, t),
            user_cpu_ms: cpu,
            ..StepUsage::default()
        });
    }
    all
}

fn report(job: u64, node: &str, steps: Vec<(StepId, StepUsage)>) -> UsageReport {
    UsageReport {
        job,
        run: 0,
        node: node.into(),
        steps,
    }
}

/// A step's tasks, largest RSS and total CPU time.
type Shown = Option<(u32, u64, u64)>;

/// What sstat shows: each running step's figures.
fn sstat(c: &Controller, job: u64) -> Vec<(StepId, Shown)> {
    c.job_usage(sluice_core::JobId(job), None)
        .unwrap()
        .into_iter()
        .map(|s| (s.step, s.usage.map(|u| (u.tasks, u.rss.max, u.cpu_ms.tot))))
        .collect()
}

#[test]
fn samples_show_in_sstat_and_the_final_figures_stay_in_the_step_records() {
    // A 4-task job on two 2-CPU nodes: its batch script on node01, one srun step on both.
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    c.schedule(0);
    let (plan, _) = c
        .start_step(id, &StepRequest::default(), &alice(), 1)
        .unwrap();
    let step = StepId::Number(plan.step);

    // Before any agent said anything: the steps are there, without figures.
    assert_eq!(sstat(&c, id.0), [(StepId::Batch, None), (step, None)]);

    // Only agents report usage.
    let r = report(
        id.0,
        "node01",
        vec![(step, figures("node01", 0, 2, 100, 10))],
    );
    assert!(c.usage_report(&r, &alice(), 2).is_err());

    // Both nodes sample the step, node01 also the batch script.
    c.usage_report(
        &report(
            id.0,
            "node01",
            vec![
                (StepId::Batch, figures("node01", 0, 1, 5, 1)),
                (step, figures("node01", 0, 2, 100, 10)),
            ],
        ),
        &root(),
        2,
    )
    .unwrap();
    c.usage_report(
        &report(
            id.0,
            "node02",
            vec![(step, figures("node02", 2, 2, 300, 20))],
        ),
        &root(),
        2,
    )
    .unwrap();
    // A node the step does not run on, and an unknown step, change nothing.
    c.usage_report(
        &report(
            id.0,
            "node09",
            vec![(step, figures("node09", 9, 1, 999, 9))],
        ),
        &root(),
        2,
    )
    .unwrap();
    c.usage_report(
        &report(
            id.0,
            "node01",
            vec![(StepId::Number(7), figures("node01", 0, 1, 999, 9))],
        ),
        &root(),
        2,
    )
    .unwrap();
    assert_eq!(
        sstat(&c, id.0),
        [(StepId::Batch, Some((1, 5, 1))), (step, Some((4, 300, 60)))]
    );
    // A later sample replaces the node's earlier one.
    c.usage_report(
        &report(
            id.0,
            "node01",
            vec![(step, figures("node01", 0, 2, 400, 30))],
        ),
        &root(),
        3,
    )
    .unwrap();
    assert_eq!(sstat(&c, id.0)[1], (step, Some((4, 400, 100))));

    // srun says the step ended first: its record takes the figures known then.
    let effects = c.end_step(id, plan.step, 0, 0, &alice(), 4).unwrap();
    assert!(matches!(effects.as_slice(),
        [Effect::PersistStep(s)] if s.usage.as_ref().map(|u| u.rss.max) == Some(400)));
    // Then each agent's final figures replace that node's samples in the record, and
    // are saved, although the step has ended.
    let last = |node: &str, first, rss, cpu| StepEnded {
        job: id.0,
        run: 0,
        step: plan.step,
        node: node.into(),
        exit_code: 0,
        signal: 0,
        usage: Some(Box::new(figures(node, first, 2, rss, cpu))),
    };
    let effects = c
        .step_ended_on(&last("node01", 0, 450, 40), &root(), 5)
        .unwrap();
    assert!(matches!(effects.as_slice(), [Effect::PersistStep(_)]));
    c.step_ended_on(&last("node02", 2, 350, 25), &root(), 5)
        .unwrap();
    let s = &c.steps[&(id, step)];
    let u = s.usage.as_ref().unwrap();
    assert_eq!(s.state, JobState::Completed);
    assert_eq!(
        (u.tasks, u.rss.max, u.rss.max_node.as_str(), u.cpu_ms.tot),
        (4, 450, "node01", 130)
    );
    // The ended step is no longer in sstat; the batch script still is.
    assert_eq!(sstat(&c, id.0), [(StepId::Batch, Some((1, 5, 1)))]);

    // The batch script ends with its final figures: the batch step's record has them,
    // and sstat has nothing more to say about the job.
    let ended = JobEnded {
        job_id: id.0,
        run: 0,
        node: "node01".into(),
        state: JobState::Completed,
        exit_code: 0,
        signal: 0,
        end: 6,
        usage: Some(Box::new(figures("node01", 0, 1, 7_000, 1_500))),
    };
    let effects = c.job_ended(&ended, 6);
    let batch = effects.iter().find_map(|e| match e {
        Effect::PersistStep(s) if s.step == StepId::Batch => s.usage.clone(),
        _ => None,
    });
    assert_eq!(
        batch.map(|u| (u.rss.max, u.cpu_ms.tot)),
        Some((7_000, 1_500))
    );
    assert!(sstat(&c, id.0).is_empty());
    // A sample that arrives after the end changes nothing.
    c.usage_report(
        &report(
            id.0,
            "node01",
            vec![(StepId::Batch, figures("node01", 0, 1, 1, 1))],
        ),
        &root(),
        7,
    )
    .unwrap();
    assert_eq!(
        c.steps[&(id, StepId::Batch)]
            .usage
            .as_ref()
            .unwrap()
            .rss
            .max,
        7_000
    );
}

#[test]
fn under_private_data_another_users_job_has_no_usage_to_show() {
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    assert!(c.job_usage(id, Some(1000)).is_ok(), "its owner");
    let err = c.job_usage(id, Some(1001)).unwrap_err();
    assert_eq!(err.message, sluice_proto::error::INVALID_JOB_ID);
    assert!(
        c.job_usage(sluice_core::JobId(99), None).is_err(),
        "unknown job"
    );
}

#[test]
fn each_part_of_a_heterogeneous_step_in_one_allocation_takes_its_own_nodes_figures() {
    // `srun -n2 A : -n2 B` in a 4-task job on two 2-CPU nodes: parts 0+0 on node01 and
    // 0+1 on node02. Each agent names step 0: its figures go to the part on its node.
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    c.schedule(0);
    for (part, exclude) in [(0, None), (1, Some("node01".to_string()))] {
        let req = StepRequest {
            ntasks: Some(2),
            nodes: Some(1),
            part: Some(part),
            step_id: (part > 0).then_some(0),
            exclude,
            ..Default::default()
        };
        c.start_step(id, &req, &alice(), 1).unwrap();
    }
    for (node, rss) in [("node01", 100), ("node02", 300)] {
        let r = report(
            id.0,
            node,
            vec![(StepId::Number(0), figures(node, 0, 2, rss, 10))],
        );
        c.usage_report(&r, &root(), 2).unwrap();
    }
    assert_eq!(
        sstat(&c, id.0)[1..],
        [
            (StepId::Part(0, 0), Some((2, 100, 20))),
            (StepId::Part(0, 1), Some((2, 300, 20)))
        ]
    );
}
