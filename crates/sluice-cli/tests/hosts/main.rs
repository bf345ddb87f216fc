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
//! hosts and restarts it: nothing is lost. `interactive_lab.rs`: `srun` from a login
//! host across two others (stdin, labels, exit codes, Ctrl-C) and `salloc`.
//! `ray_lab.rs`: the real Ray and Dask started inside an allocation by `examples/ray/`
//! and `examples/dask/`, with the job's CPUs and GPUs on each node, nothing left after.

mod ctld_crash_lab;
mod harness;
mod interactive_lab;
mod lab;
mod munge_lab;
mod partition_lab;
mod ranks_lab;
mod ray_lab;
mod restart_lab;
mod seeds_lab;
