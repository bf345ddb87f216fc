//! Interactive allocations, as `salloc` and `srun` outside a job obtain them: submit,
//! tell the user while the job waits, return once it runs.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use sluice_proto::types::{CancelRequest, JobDescription, JobRecord, JobState, SubmitReply};
use sluice_proto::Client;

use super::common::{controller, describe, fail};

/// How often a waiting command asks the controller about its job.
const POLL: Duration = Duration::from_millis(200);

/// The last of the signals [`catch`] watches that arrived (0: none).
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn note_signal(sig: libc::c_int) {
    CAUGHT.store(sig, Ordering::SeqCst);
}

/// From now on SIGINT, SIGTERM and SIGHUP are only noted (see [`caught`]), so that the
/// command can give its allocation up rather than die holding it.
pub fn catch() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(sig, note_signal as *const () as libc::sighandler_t);
        }
    }
}

/// The signal [`catch`] noted, if one came.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Gives SIGINT, SIGTERM and SIGHUP their default effect back.
pub fn release_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: restoring the default disposition.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
}

/// Submits `desc` (an interactive job) for command `me` and waits until it runs; its
/// record then. Prints Slurm's messages on stderr: for `salloc`, "Granted job
/// allocation N" (after "Pending job allocation N" and "job N queued and waiting for
/// resources" when it had to wait); `srun` is quiet unless it waits. Exits with 1 and
/// Slurm's message when the controller refuses the job ("Job submit/allocate failed: …"
/// from salloc, "Unable to allocate resources: …" from srun) or it ends before it starts
/// (cancelled while pending).
pub fn allocate(client: &Client, me: &str, desc: &JobDescription) -> JobRecord {
    let salloc = me == "salloc";
    // Interrupted while it waits, the command cancels its job (as Slurm's do) instead of
    // leaving it queued for nobody.
    catch();
    let reply: SubmitReply = match client.post("/v1/jobs", desc) {
        Ok(r) => r,
        Err(e) => {
            if describe(&e) == super::sbatch::BAD_GRES {
                fail(me, super::sbatch::BAD_GRES, 1)
            }
            super::sbatch::explain_refusal(client, me, desc, &describe(&e));
            let what = if salloc {
                "Job submit/allocate failed"
            } else {
                "Unable to allocate resources"
            };
            fail(me, format!("{what}: {}", describe(&e)), 1)
        }
    };
    let job = reply.job_id;
    let mut waited = false;
    loop {
        if caught().is_some() {
            relinquish(job);
            eprintln!("{me}: Job allocation {job} has been revoked.");
            eprintln!("{me}: Job aborted due to signal");
            std::process::exit(1);
        }
        match client.get::<JobRecord>(&format!("/v1/jobs/{job}")) {
            Ok(r) if r.state == JobState::Running => {
                release_signals();
                if waited {
                    eprintln!("{me}: job {job} has been allocated resources");
                }
                if salloc {
                    eprintln!("{me}: Granted job allocation {job}");
                }
                return r;
            }
            Ok(r) if r.state.is_finished() => {
                fail(me, format!("Job allocation {job} has been revoked."), 1)
            }
            Ok(_) => {
                if !waited {
                    if salloc {
                        eprintln!("{me}: Pending job allocation {job}");
                    }
                    eprintln!("{me}: job {job} queued and waiting for resources");
                    waited = true;
                }
            }
            Err(e) => {
                relinquish(job);
                fail(me, describe(&e), 1)
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Gives allocation `job` up (cancels it), as a command does when it stops waiting.
pub fn relinquish(job: u64) {
    let req = CancelRequest {
        jobs: vec![(job, None)],
        ..Default::default()
    };
    let _ = controller().post::<_, serde_json::Value>("/v1/cancel", &req);
}

/// Reports the end of allocation `job` with its command's exit status (`code` as a
/// shell gives it: above 128 means killed by signal `code - 128`).
pub fn complete(client: &Client, job: u64, code: i32) {
    if code > 128 {
        complete_with(client, job, 0, code - 128)
    } else {
        complete_with(client, job, code, 0)
    }
}

/// Reports the end of allocation `job`: its command's exit code, or the signal that
/// killed it.
pub fn complete_with(client: &Client, job: u64, exit_code: i32, signal: i32) {
    let body = sluice_proto::types::ExitReport { exit_code, signal };
    let _ = client.post::<_, serde_json::Value>(&format!("/v1/jobs/{job}/complete"), &body);
}

/// `--test-only` (sbatch, srun, as `me`): when and where the controller would start the
/// job, which it checks as a submission but neither queues nor numbers (Slurm's
/// `slurm_job_will_run`, its line on stderr); nothing runs.
pub fn test_only(client: &Client, me: &str, desc: &JobDescription) -> i32 {
    match client.post::<_, sluice_proto::types::WillRunReply>("/v1/will-run", desc) {
        Ok(w) => {
            eprintln!(
                "{me}: Job {} to start at {} using {} processors on nodes {} in partition {}",
                w.job_id,
                sluice_proto::time::shown(w.start),
                w.cpus,
                w.nodes,
                w.partition
            );
            0
        }
        Err(e) => {
            let msg = describe(&e);
            let msg = match msg.rsplit_once('\n') {
                Some((first, last)) => {
                    for line in first.lines() {
                        eprintln!("{me}: error: {line}");
                    }
                    last.to_string()
                }
                None => msg,
            };
            super::sbatch::explain_refusal(client, me, desc, &msg);
            // Slurm's `slurm_perror("allocation failure")`, without the program's name.
            eprintln!("allocation failure: {msg}");
            1
        }
    }
}
