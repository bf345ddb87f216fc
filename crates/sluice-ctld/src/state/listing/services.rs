//! Where a service runs now, by its stable name: what the controller's `/services/NAME/`
//! forwards to (`server/services.rs`), read from the snapshot, never from the loop.
//!
//! The target is always a node's address as the controller knows it and the port the
//! service declared (`--port`): nothing in a request chooses it.

use sluice_proto::types::JobState;

use super::Listing;

/// Where a service's requests go: its job's first node, on the service's port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceTarget {
    /// The job now serving the name.
    pub job: u64,
    /// The node's address: its `NodeAddr` (the host the controller sends the node's
    /// orders to) when agents are on their own hosts, this host's loopback address
    /// for `sluice up`'s nodes, which all run here.
    pub host: String,
    /// The service's port there.
    pub port: u16,
}

/// What the snapshot says of a service name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceAt {
    /// Running: its requests go to the target.
    Live(ServiceTarget),
    /// Known and not ended, but running nowhere now (pending, requeued, moving): it
    /// may come back in a moment.
    Away,
    /// Known, and every job of that name has ended.
    Ended,
    /// Running, but it declared no port (`--port`), or one the controller does not
    /// forward to: a privileged port (below 1024) or a Sluice daemon's
    /// (`SlurmctldPort`, the controller's listener, the node's agent).
    NoPort,
    /// No job of that name.
    Unknown,
}

impl Listing {
    /// Where the service named `name` runs now. Of several jobs of that name (the
    /// name is unique among live services; ended ones stay until purged), the
    /// running one with the highest id answers.
    pub fn service(&self, name: &str) -> ServiceAt {
        let Some(ids) = self.by_service.get(name) else {
            return ServiceAt::Unknown;
        };
        let mut away = false;
        for id in ids.iter().rev() {
            let Some(l) = self.jobs.get(id) else { continue };
            let j = &l.job;
            match j.state {
                JobState::Running => {
                    let Some(first) = j.alloc.first() else {
                        away = true;
                        continue;
                    };
                    let Some(port) = j.desc.service.as_ref().and_then(|s| s.port) else {
                        return ServiceAt::NoPort;
                    };
                    if self.never_forwarded(first.node, port) {
                        return ServiceAt::NoPort;
                    }
                    return ServiceAt::Live(ServiceTarget {
                        job: id.0,
                        host: self.node_host(first.node),
                        port,
                    });
                }
                s if !s.is_finished() => away = true,
                _ => {}
            }
        }
        if away {
            ServiceAt::Away
        } else {
            ServiceAt::Ended
        }
    }

    /// Where the service declaring `port` runs now, for the plain TCP forward on that
    /// port (`ServiceTcpPorts`): of several, the running one with the lowest id holds
    /// it (the first to have it); the others are reached by name only.
    pub fn service_on_port(&self, port: u16) -> ServiceAt {
        let (mut away, mut known) = (false, false);
        let mut live: Option<(sluice_core::JobId, sluice_core::NodeId)> = None;
        for ids in self.by_service.values() {
            for id in ids {
                let Some(l) = self.jobs.get(id) else { continue };
                let j = &l.job;
                if j.desc.service.as_ref().and_then(|s| s.port) != Some(port) {
                    continue;
                }
                known = true;
                match (j.state, j.alloc.first()) {
                    // The lowest id running holds the port (a running one not the
                    // lowest counts as away: the live one answers anyway).
                    (JobState::Running, Some(first))
                        if live.is_none_or(|(other, _)| *id < other) =>
                    {
                        live = Some((*id, first.node));
                    }
                    (s, _) if !s.is_finished() => away = true,
                    _ => {}
                }
            }
        }
        match live {
            Some((_, node)) if self.never_forwarded(node, port) => ServiceAt::NoPort,
            Some((id, node)) => ServiceAt::Live(ServiceTarget {
                job: id.0,
                host: self.node_host(node),
                port,
            }),
            None if away => ServiceAt::Away,
            None if known => ServiceAt::Ended,
            None => ServiceAt::Unknown,
        }
    }

    /// Whether `port` on `node` is one a service may not be reached at: privileged
    /// (the node's system services), or a Sluice daemon's.
    fn never_forwarded(&self, node: sluice_core::NodeId, port: u16) -> bool {
        let conf = &self.conf;
        let listener = conf
            .service_base
            .as_deref()
            .and_then(|b| b.rsplit(':').next())
            .and_then(|p| p.parse::<u16>().ok());
        let agent = conf.agents_over_tcp.then(|| {
            conf.node_addresses
                .get(node.index())
                .and_then(|a| a.port)
                .unwrap_or(conf.net.slurmd_port)
        });
        port < 1024
            || port == conf.net.slurmctld_port
            || Some(port) == listener
            || Some(port) == agent
    }

    /// The address of node `node` as the controller reaches it.
    fn node_host(&self, node: sluice_core::NodeId) -> String {
        if !self.conf.agents_over_tcp {
            return "127.0.0.1".to_string();
        }
        match self.conf.node_addresses.get(node.index()) {
            Some(a) if !a.addr.is_empty() => a.addr.clone(),
            _ => self.conf.cluster.node(node).name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sluice_proto::service::{RestartPolicy, ServiceSpec};
    use sluice_proto::types::{JobEnded, JobState};

    use super::*;
    use crate::config::NodeAddress;
    use crate::state::listing::Publisher;
    use crate::state::tests::{conf, desc, submit};
    use crate::state::Controller;

    fn service(name: &str, port: Option<u16>) -> sluice_proto::types::JobDescription {
        let mut d = desc(1, 600);
        d.service = Some(ServiceSpec {
            name: name.into(),
            restart: RestartPolicy::OnFailure,
            max_restarts: None,
            health: None,
            port,
        });
        d
    }

    #[test]
    fn a_service_is_found_by_name_where_it_runs_and_not_once_it_ended() {
        let mut c = Controller::new(conf(2, 4), Path::new("/state"), vec![], vec![], 0);
        let mut p = Publisher::new(&mut c, 0);
        let mut next = 10;
        // A plain job of the same job name is no service.
        let mut plain = desc(1, 600);
        plain.name = "llm".into();
        submit(&mut c, plain, &mut next, 1);
        assert_eq!(p.current().service("llm"), ServiceAt::Unknown);
        let (id, _) = submit(&mut c, service("llm", Some(8000)), &mut next, 1);
        submit(&mut c, service("noport", None), &mut next, 1);
        p.publish(&mut c, 1);
        // Queued, not started: away, may come.
        assert_eq!(p.current().service("llm"), ServiceAt::Away);
        c.schedule(2);
        p.publish(&mut c, 2);
        assert_eq!(
            p.current().service("llm"),
            ServiceAt::Live(ServiceTarget {
                job: id.0,
                host: "127.0.0.1".into(),
                port: 8000
            })
        );
        assert_eq!(p.current().service("noport"), ServiceAt::NoPort);
        // By its port (the plain TCP forward), the same.
        let ServiceAt::Live(by_port) = p.current().service_on_port(8000) else {
            panic!("not live by port")
        };
        assert_eq!(by_port.job, id.0);
        assert_eq!(p.current().service_on_port(8001), ServiceAt::Unknown);
        assert_eq!(p.current().service("ll"), ServiceAt::Unknown);
        assert_eq!(p.current().service("llm/"), ServiceAt::Unknown);
        let node = p.current().job(id).unwrap().nodes[0].clone();
        c.job_ended(
            &JobEnded {
                job_id: id.0,
                run: 0,
                node,
                state: JobState::Failed,
                exit_code: 1,
                signal: 0,
                end: 3,
                usage: None,
            },
            3,
        );
        p.publish(&mut c, 3);
        assert_eq!(p.current().service("llm"), ServiceAt::Ended);
        assert_eq!(p.current().service_on_port(8000), ServiceAt::Ended);
    }

    #[test]
    fn agents_on_their_own_hosts_are_reached_at_their_node_addr() {
        let mut cf = conf(2, 4);
        cf.agents_over_tcp = true;
        cf.node_addresses = vec![
            NodeAddress {
                addr: "10.0.0.1".into(),
                hostname: "node01".into(),
                port: None,
            },
            NodeAddress {
                addr: "10.0.0.2".into(),
                hostname: "node02".into(),
                port: None,
            },
        ];
        let mut c = Controller::new(cf, Path::new("/state"), vec![], vec![], 0);
        let mut p = Publisher::new(&mut c, 0);
        let mut next = 10;
        // node01 busy: the service lands on node02.
        let mut big = desc(4, 600);
        big.name = "big".into();
        submit(&mut c, big, &mut next, 1);
        c.schedule(1);
        let (id, _) = submit(&mut c, service("llm", Some(8000)), &mut next, 1);
        c.schedule(2);
        p.publish(&mut c, 2);
        let ServiceAt::Live(t) = p.current().service("llm") else {
            panic!("not live")
        };
        assert_eq!(
            t,
            ServiceTarget {
                job: id.0,
                host: "10.0.0.2".into(),
                port: 8000
            }
        );
    }
}
