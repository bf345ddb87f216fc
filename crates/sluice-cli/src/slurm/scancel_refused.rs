//! What `scancel` does with the jobs the controller refused one by one, as Slurm's
//! scancel does with each job's answer: a job the caller may not touch is reported
//! (`Access/permission denied`, exit 210), and a job that cannot take a signal yet
//! (pending or suspended) is asked about again, ten times in all with growing pauses
//! (5 s, then 6, ... 14), before it is reported (exit 228).

use sluice_proto::error::ErrorCode;
use sluice_proto::types::{CancelRefusal, CancelRequest, Cancelled};
use sluice_proto::{Client, ClientError};

use super::scancel_live::Asked;

/// Slurm's error numbers for the refusals (the exit status is the number's low byte).
const ACCESS_DENIED: i32 = 2002;
const TRANSITION: i32 = 2020;

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
    let mut report = |r: &CancelRefusal, name: &str| {
        eprintln!(
            "scancel: error: Kill job error on job id {name}: {}",
            r.error
        );
        worst = worst.max(number(r.code));
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
/// ten times in all counting the first. Returns the refusals left after the last.
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
        let ids: Vec<u64> = busy
            .iter()
            .flat_map(|r| std::iter::once(r.job).chain(r.with.iter().copied()))
            .collect();
        let answer = send(&ids)?;
        // Refused for another reason now: reported as it is.
        let (still, other): (Vec<_>, Vec<_>) =
            answer.into_iter().partition(|r| r.code == ErrorCode::Busy);
        left.extend(other);
        busy = still;
    }
    left.extend(busy);
    Ok(left)
}

/// Slurm's error number for a refusal.
fn number(code: ErrorCode) -> i32 {
    match code {
        ErrorCode::AccessDenied => ACCESS_DENIED,
        ErrorCode::Busy => TRANSITION,
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
}
