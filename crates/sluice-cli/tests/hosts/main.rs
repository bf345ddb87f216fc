//! Tests on a lab of hosts made from namespaces on this machine (`tests/hosts/hosts.sh`,
//! driven by `harness.rs`). They need root; elsewhere each says it is skipped.
//!
//! `lab.rs` tests the harness itself: names, addresses and TCP between hosts, each
//! host's own hostname, `/tmp` and spool and the shared home, users, cut links, killed
//! and restarted hosts, and that nothing is left behind, after a panic or a dead test
//! process too.
//!
//! `seeds_lab.rs` runs Sluice on the seeds' lab: `slurmctld` on `head01`, `slurmd` on
//! `node01`–`node04`, a user's job submitted on one host running on two others, a
//! client with a wrong key refused. `munge_lab.rs` does the same under
//! `AuthType=auth/munge` with the real munged on every host. `restart_lab.rs` kills and
//! restarts node02's agent while a user's jobs run there: they run on and end right.
//! `ranks_lab.rs` runs the seeds' job script, its 16 ranks meeting over the network at
//! the rendezvous host. `partition_lab.rs` cuts a running job's host off for longer
//! than `SlurmdTimeout`: the job runs again elsewhere, the stale copy is killed once
//! the link is back. `ctld_crash_lab.rs` kills the controller while jobs run on three
//! hosts and restarts it: nothing is lost. `ha_lab.rs`: a backup controller on node01,
//! the state in PostgreSQL on db01: the primary SIGKILLed (the backup takes over, the
//! running job ends right), handed over on purpose (`scontrol takeover`), killed again
//! and again in a storm of submissions (`SLUICE_HA_KILLS`; no job lost, doubled or run
//! twice), and cut off from the network (the backup takes over, the former primary
//! steps down). `interactive_lab.rs`: `srun` from a login
//! host across two others (stdin, labels, exit codes, Ctrl-C) and `salloc`.
//! `training_lab.rs`: the seeds' training job (`--requeue`, two nodes) loses a host,
//! is requeued on the hosts left (or waits for one, explain saying why) and resumes
//! from its checkpoint; a worker restarted by its launcher leaves the job alone.
//! `notebook_lab.rs`: real Jupyter servers on a GPU from `salloc` and `sbatch`, reached
//! from a login host and ended at their time limit; batchspawner's `SlurmSpawner`.
//! `service_lab.rs`: a service job's host is killed, twice: it starts on another host
//! and answers again (the outage measured). `service_address_lab.rs`: the same move
//! seen through the service's stable address on `head01`, which answers again.
//! `ray_lab.rs`: the real Ray and Dask started inside an allocation by `examples/ray/`
//! and `examples/dask/`, with the job's CPUs and GPUs on each node, nothing left after.

mod ctld_crash_lab;
mod ha_lab;
mod harness;
mod interactive_lab;
mod lab;
mod munge_lab;
mod notebook_lab;
mod partition_lab;
mod ranks_lab;
mod ray_lab;
mod restart_lab;
mod seeds_lab;
mod service_address_lab;
mod service_lab;
mod training_lab;
