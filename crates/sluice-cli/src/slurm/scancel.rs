//! `scancel`: cancel or signal jobs.

use sluice_conf::options::signal_number;
use sluice_proto::types::{CancelRequest, JobState};

use super::common::{controller, describe, fail, parse_job_arg};
use super::squeue::current_user;

/// Runs `scancel`.
pub fn main(args: Vec<String>) -> i32 {
    const ME: &str = "scancel";
    let mut req = CancelRequest::default();
    let mut i = 0;
    let mut filters = false;
    while i < args.len() {
        let a = args[i].clone();
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let value = |i: &mut usize| -> String {
            if let Some(v) = &inline {
                return v.clone();
            }
            if !key.starts_with("--") && key.len() > 2 {
                return key[2..].to_string();
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .unwrap_or_else(|| fail(ME, format!("option '{key}' requires an argument"), 1))
        };
        if key == "-s" || key.starts_with("-s") && !key.starts_with("--") || key == "--signal" {
            let v = value(&mut i);
            req.signal = Some(
                signal_number(&v)
                    .unwrap_or_else(|| fail(ME, format!("Unknown job signal: {v}"), 1)),
            );
        } else if key == "-b" || key == "--batch" {
            req.batch = true;
        } else if key == "-f" || key == "--full" {
            req.batch = true;
            req.full = true;
        } else if key == "-u" || key == "--user" {
            req.user = Some(value(&mut i));
            filters = true;
        } else if key == "--me" {
            req.user = Some(current_user());
            filters = true;
        } else if key == "-n" || key == "--name" || key == "--jobname" {
            req.name = Some(value(&mut i));
            filters = true;
        } else if key == "-p" || key == "--partition" {
            req.partition = Some(value(&mut i));
            filters = true;
        } else if key == "-t" || key == "--state" {
            for s in value(&mut i).split(',') {
                req.states.push(
                    JobState::parse(s).unwrap_or_else(|| {
                        fail(ME, format!("Invalid job state specified: {s}"), 1)
                    }),
                );
            }
            filters = true;
        } else if key == "-Q"
            || key == "--quiet"
            || key == "-v"
            || key == "--verbose"
            || key == "-i"
            || key == "--interactive"
        {
        } else if key.starts_with('-') && key != "-" {
            fail(ME, format!("unrecognized option '{a}'"), 1);
        } else {
            for part in a
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
            {
                match parse_job_arg(part) {
                    Some(v) => req.jobs.extend(v),
                    None => fail(ME, format!("Invalid job id {part}"), 1),
                }
            }
        }
        i += 1;
    }
    if req.jobs.is_empty() && !filters {
        fail(ME, "No job identification provided", 1);
    }
    if req.signal == Some(libc::SIGKILL) {
        // As Slurm: SIGKILL, to the steps, the batch shell or both, cancels the job
        // (`CANCELLED by UID`, SIGTERM then SIGKILL after KillWait).
        req.signal = None;
        req.batch = false;
        req.full = false;
    }
    match controller().post::<_, serde_json::Value>("/v1/cancel", &req) {
        Ok(_) => 0,
        Err(e) => fail(ME, describe(&e), 1),
    }
}
