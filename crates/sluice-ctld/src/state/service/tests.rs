//! Service stories on the controller: a name taken by a live service, the agent's
//! reports counted and audited once, stale reports ignored, a requeue starting a new
//! run's count.

use super::super::tests::{alice, conf, desc, submit};
use super::super::*;
use sluice_proto::audit::AuditWhat;
use sluice_proto::service::{Health, RestartCause, RestartPolicy, ServiceReport, ServiceSpec};
use sluice_proto::types::CancelRequest;

fn service(name: &str) -> JobDescription {
    JobDescription {
        service: Some(ServiceSpec {
            name: name.into(),
            restart: RestartPolicy::Always,
            max_restarts: None,
            health: None,
            port: Some(8000),
        }),
        ..desc(1, 600)
    }
}

fn agent() -> Caller {
    Caller {
        uid: 0,
        gid: 0,
        admin: true,
    }
}

fn report(job: JobId, run: u32, restarts: u32, health: Health) -> ServiceReport {
    ServiceReport {
        job_id: job.0,
        run,
        restarts,
        health,
        last: Some((RestartCause::Unhealthy, 0, 9)),
        at: 50,
    }
}

#[test]
fn a_live_services_name_is_refused_until_it_ends() {
    let mut c = Controller::new(conf(1, 4), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, service("llm"), &mut next, 0);
    let e = c
        .prepare(service("llm"), &alice(), "alice", "alice", 1)
        .unwrap_err();
    assert_eq!(e.message, "Service name llm is already taken by job 1");
    assert!(c
        .prepare(service("other"), &alice(), "alice", "alice", 1)
        .is_ok());
    let cancel = CancelRequest {
        jobs: vec![(id.0, None)],
        ..Default::default()
    };
    c.cancel(&cancel, &alice(), 2).unwrap();
    assert!(c
        .prepare(service("llm"), &alice(), "alice", "alice", 3)
        .is_ok());
}

#[test]
fn restarts_are_counted_and_audited_once_and_stale_reports_ignored() {
    let mut c = Controller::new(conf(1, 4), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, service("llm"), &mut next, 0);
    c.schedule(0);
    // Not an agent: refused.
    assert!(c
        .service_report(&report(id, 0, 1, Health::Starting), &alice(), 10)
        .is_err());
    c.service_report(&report(id, 0, 0, Health::Healthy), &agent(), 10)
        .unwrap();
    c.service_report(&report(id, 0, 2, Health::Starting), &agent(), 60)
        .unwrap();
    // The same report again (an agent restarted): nothing more.
    let effects = c
        .service_report(&report(id, 0, 2, Health::Starting), &agent(), 61)
        .unwrap();
    assert!(effects.is_empty());
    // An earlier run's: ignored.
    c.service_report(&report(id, 7, 5, Health::Healthy), &agent(), 62)
        .unwrap();
    let r = c.job(id).unwrap();
    let st = r.service_state.unwrap();
    assert_eq!(
        (st.restarts, st.run_restarts, st.health),
        (2, 2, Health::Starting)
    );
    let restarts: Vec<u32> = c
        .take_audit()
        .iter()
        .filter_map(|e| match &e.what {
            AuditWhat::ServiceRestarted { restart, cause, .. } => {
                assert_eq!(*cause, RestartCause::Unhealthy);
                Some(*restart)
            }
            _ => None,
        })
        .collect();
    assert_eq!(restarts, [1, 2]);
    // Requeued: the new run counts from 0, the total goes on.
    c.requeue(id, None, &alice(), 70).unwrap();
    c.job_ended(
        &JobEnded {
            job_id: id.0,
            run: 0,
            node: "node01".into(),
            state: JobState::Requeued,
            exit_code: 0,
            signal: 0,
            end: 71,
            usage: None,
        },
        71,
    );
    c.schedule(72);
    c.service_report(&report(id, 1, 1, Health::Healthy), &agent(), 80)
        .unwrap();
    let st = c.job(id).unwrap().service_state.unwrap();
    assert_eq!(
        (st.restarts, st.run, st.run_restarts, st.health),
        (3, 1, 1, Health::Healthy)
    );
}
