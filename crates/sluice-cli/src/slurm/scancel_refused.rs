//! What `scancel` does with the jobs the controller refused one by one, as Slurm's
//! scancel does with each job's answer: a job the caller may not touch is reported
//! (`Access/permission denied`, exit 210), and a job that cannot take a signal yet
//! (pending or suspended) is asked about again, ten times in all with growing pauses
//! (5 s, then 6, ... 14), before it is reported (exit 228). One found ended meanwhile
//! is said with `-v` only (exit 229 for a signal), and a controller lost meanwhile is
//! each job's last answer (exit 8, the low byte of Slurm's 1800).

use sluice_proto::error::ErrorCode;
use sluice_proto::types::{CancelRefusal, CancelRequest, Cancelled};
use sluice_proto::{Client, ClientError};

use super::common::describe;
use super::scancel_live::Asked;

/// Slurm's error numbers for the refusals (the exit status is the number's low byte).
const ACCESS_DENIED: i32 = 2002;
const TRANSITION: i32 = 2020;
const ALREADY_DONE: i32 = 2021;
const INVALID_JOB_ID: i32 = 2017;
/// SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR.
const CONNECTION_ERROR: i32 = 1800;

/// How many times in all Slurm's scancel asks about one job (MAX_CANCEL_RETRY).
const TRIES: u64 = 10;

/// Asks the controller again about these records; its refusals.
type AskAgain<'a> = dyn FnMut(&[u64]) -> Result<Vec<CancelRefusal>, ClientError> + 'a;

/// Reports the refusals of a cancel and asks again about the jobs not ready for a
/// signal; returns the worst error number (0: none). `named`: with `-v` after a filter,
/// the jobs it chose, each said now beside its refusal, as Slurm's says them job by job.
pub(crate) fn settle(
    client: &Client,
    req: &CancelRequest,
    asked: &Asked,
    level: i32,
    named: Option<Vec<(u64, String)>>,
    refused: Vec<CancelRefusal>,
) -> Result<i32, ClientError> {
    let (busy, other): (Vec<_>, Vec<_>) =
        refused.into_iter().partition(|r| r.code == ErrorCode::Busy);
    let mut worst = 0;
    // As Slurm's scancel: a job found ended (or gone) is said with -v only, and is no
    // error for a cancel, only for a signal it could not take.
    let kill = req.signal.is_none_or(|s| s == 9);
    let mut report = |r: &CancelRefusal, name: &str| {
        let ended = matches!(r.code, ErrorCode::AlreadyDone | ErrorCode::InvalidJobId);
        if !ended || level > 0 {
            eprintln!(
                "scancel: error: Kill job error on job id {name}: {}",
                r.error
            );
        }
        if !(ended && kill) {
            worst = worst.max(number(r.code));
        }
    };
    match &named {
        Some(named) => {
            for (id, name) in named {
                asked.say(name);
                if let Some(r) = other.iter().find(|r| r.job == *id) {
                    report(r, name);
                }
            }
            for r in other.iter().filter(|r| !named.iter().any(|n| n.0 == r.job)) {
                report(r, &r.named);
            }
        }
        None => other.iter().for_each(|r| report(r, &r.named)),
    }
    let mut send = |jobs: &[u64]| -> Result<Vec<CancelRefusal>, ClientError> {
        let again = CancelRequest {
            records: jobs.to_vec(),
            signal: req.signal,
            batch: req.batch,
            full: req.full,
            ..Default::default()
        };
        Ok(client.post::<_, Cancelled>("/v1/cancel", &again)?.refused)
    };
    let pause = |secs: u64| std::thread::sleep(std::time::Duration::from_secs(secs));
    for r in ask_again(busy, level, pause, &mut send)? {
        report(&r, &r.named);
    }
    Ok(worst)
}

/// Asks again about jobs refused as not ready for a signal, as Slurm's scancel does:
/// after each refusal it says so with `-v`, pauses 5 s (then 6, 7, ...) and asks again,
/// ten times in all counting the first. Returns the refusals left after the last: a
/// job still not ready, one refused now for another reason (ended meanwhile: already
/// done), each under the name it was first refused by. A controller that cannot be
/// asked any more is each job's last answer.
pub(crate) fn ask_again(
    mut busy: Vec<CancelRefusal>,
    level: i32,
    mut pause: impl FnMut(u64),
    send: &mut AskAgain,
) -> Result<Vec<CancelRefusal>, ClientError> {
    let mut left = Vec::new();
    for i in 0..TRIES {
        if busy.is_empty() {
            break;
        }
        if level > 0 {
            for _ in &busy {
                eprintln!("scancel: Job is in transitional state, retrying");
            }
        }
        pause(5 + i);
        if i + 1 == TRIES {
            break;
        }
        let ids: Vec<u64> = busy.iter().flat_map(records_of).collect();
        let answer = match send(&ids) {
            Ok(answer) => answer,
            Err(e) => {
                let (code, error) = match &e {
                    // A refusal of the whole request names the job itself already.
                    ClientError::Status { code, message, .. } => (
                        *code,
                        message
                            .split_once(": ")
                            .filter(|(head, _)| head.starts_with("Kill job error on job"))
                            .map_or(message.clone(), |(_, why)| why.to_string()),
                    ),
                    other => (ErrorCode::ControllerUnreachable, describe(other)),
                };
                left.extend(busy.drain(..).map(|r| CancelRefusal {
                    code,
                    error: error.clone(),
                    ..r
                }));
                break;
            }
        };
        // Each job's answer: its records' refusals (none: it took the signal). Every
        // record still not ready is asked about again, once; a job none of whose
        // records is, but one is refused for another reason, ends with that.
        let mut still: Vec<CancelRefusal> = Vec::new();
        for asked in busy.drain(..) {
            let mine: Vec<&CancelRefusal> = answer
                .iter()
                .filter(|a| records_of(a).any(|id| records_of(&asked).any(|x| x == id)))
                .collect();
            let waiting: Vec<&CancelRefusal> = mine
                .iter()
                .copied()
                .filter(|a| a.code == ErrorCode::Busy)
                .collect();
            if waiting.is_empty() {
                if let Some(&a) = mine.first() {
                    left.push(CancelRefusal {
                        named: asked.named.clone(),
                        ..a.clone()
                    });
                }
                continue;
            }
            let alone = waiting.len() == 1;
            for a in waiting {
                if still.iter().any(|s| s.job == a.job) {
                    continue;
                }
                still.push(CancelRefusal {
                    // Still the job it was: under its first name.
                    named: if alone {
                        asked.named.clone()
                    } else {
                        a.named.clone()
                    },
                    ..a.clone()
                });
            }
        }
        busy = still;
    }
    left.extend(busy);
    Ok(left)
}

/// The records a refusal stands for: its own and those refused with it.
fn records_of(r: &CancelRefusal) -> impl Iterator<Item = u64> + '_ {
    std::iter::once(r.job).chain(r.with.iter().copied())
}

/// Slurm's error number for a refusal.
fn number(code: ErrorCode) -> i32 {
    match code {
        ErrorCode::AccessDenied => ACCESS_DENIED,
        ErrorCode::Busy => TRANSITION,
        ErrorCode::AlreadyDone => ALREADY_DONE,
        ErrorCode::InvalidJobId => INVALID_JOB_ID,
        ErrorCode::ControllerUnreachable => CONNECTION_ERROR,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(job: u64) -> CancelRefusal {
        CancelRefusal {
            job,
            named: job.to_string(),
            error: "Job can not be altered now, try again later".into(),
            code: ErrorCode::Busy,
            with: Vec::new(),
        }
    }

    /// The refusal of an array's unstarted rest `7_[1-2]`: records 7 and 8.
    fn array_rest() -> CancelRefusal {
        CancelRefusal {
            named: "7_[1-2]".into(),
            with: vec![8],
            ..busy(7)
        }
    }

    #[test]
    fn a_pending_job_is_asked_about_ten_times_with_growing_pauses() {
        let mut pauses = Vec::new();
        let mut asked = Vec::new();
        let mut send = |jobs: &[u64]| {
            asked.push(jobs.to_vec());
            Ok(jobs.iter().map(|&j| busy(j)).collect())
        };
        let left = ask_again(vec![busy(7)], 0, |s| pauses.push(s), &mut send).unwrap();
        assert_eq!(left, [busy(7)]);
        // The first ask was the cancel itself: nine more, after pauses of 5 to 14 s
        // (95 s in all, as Slurm's scancel waits).
        assert_eq!(asked.len(), 9);
        assert_eq!(pauses, (5..=14).collect::<Vec<u64>>());
    }

    #[test]
    fn a_job_that_starts_meanwhile_takes_the_signal_on_the_next_ask() {
        let mut tries = 0;
        let mut send = |jobs: &[u64]| {
            tries += 1;
            // Job 8 started after the first pause; job 9 is still pending.
            Ok(jobs.iter().filter(|&&j| j == 9).map(|&j| busy(j)).collect())
        };
        let mut pauses = Vec::new();
        let left = ask_again(vec![busy(8), busy(9)], 0, |s| pauses.push(s), &mut send).unwrap();
        assert_eq!(left, [busy(9)]);
        assert_eq!(tries, 9);
        let mut none = |_: &[u64]| -> Result<Vec<CancelRefusal>, ClientError> { Ok(Vec::new()) };
        let left = ask_again(vec![busy(8)], 0, |_| {}, &mut none).unwrap();
        assert_eq!(left, []);
    }

    #[test]
    fn a_job_that_ends_meanwhile_is_left_as_already_done_under_its_first_name() {
        // Job 7, an array's unstarted rest `7_[1-2]` (records 7, 8), is cancelled
        // by someone else during the first pause: both records have ended.
        let first = array_rest();
        let mut asked = Vec::new();
        let mut send = |jobs: &[u64]| {
            asked.push(jobs.to_vec());
            Ok(jobs
                .iter()
                .map(|&j| CancelRefusal {
                    code: ErrorCode::AlreadyDone,
                    error: "Job/step already completing or completed".into(),
                    ..busy(j)
                })
                .collect())
        };
        let left = ask_again(vec![first], 0, |_| {}, &mut send).unwrap();
        assert_eq!(asked, [vec![7, 8]]);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].code, ErrorCode::AlreadyDone);
        assert_eq!(left[0].named, "7_[1-2]");
        // Slurm's ESLURM_ALREADY_DONE, whose low byte is scancel's exit status 229.
        assert_eq!(number(left[0].code), 2021);
    }

    #[test]
    fn a_controller_lost_meanwhile_is_each_jobs_last_answer() {
        let mut tries = 0;
        let mut send = |_: &[u64]| -> Result<Vec<CancelRefusal>, ClientError> {
            tries += 1;
            Err(ClientError::Io(std::io::Error::from(
                std::io::ErrorKind::ConnectionReset,
            )))
        };
        let left = ask_again(vec![busy(3), busy(4)], 0, |_| {}, &mut send).unwrap();
        assert_eq!(tries, 1, "not asked again once the controller is gone");
        assert_eq!(
            left.iter().map(|r| (r.job, r.code)).collect::<Vec<_>>(),
            [
                (3, ErrorCode::ControllerUnreachable),
                (4, ErrorCode::ControllerUnreachable)
            ]
        );
        // Slurm's SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR, the worst of the run.
        assert_eq!(number(left[0].code), 1800);
    }

    #[test]
    fn a_job_whose_records_part_ways_has_each_asked_about_again_once() {
        // `7_[1-2]` (records 7, 8) is refused; meanwhile task 8 was started and
        // suspended, so the controller refuses both records on their own.
        let first = array_rest();
        let mut asked = Vec::new();
        let mut send = |jobs: &[u64]| {
            asked.push(jobs.to_vec());
            Ok(jobs.iter().map(|&j| busy(j)).collect())
        };
        let left = ask_again(vec![first], 0, |_| {}, &mut send).unwrap();
        // Each asked about again every time, once, and both left in the end.
        assert!(asked.iter().all(|a| a == &[7, 8]), "{asked:?}");
        assert_eq!(left.iter().map(|r| r.job).collect::<Vec<_>>(), [7, 8]);
    }
}
