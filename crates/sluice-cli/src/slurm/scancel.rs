//! `scancel`: cancel or signal jobs.

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_conf::options::signal_number;
use sluice_proto::types::{CancelRequest, JobState};

use super::common::{controller, describe, fail, option_message, parse_job_arg};
use super::squeue::current_user;

/// scancel's options: Slurm's names, in the order of its table (which
/// orders the candidates of an ambiguous prefix), for what Sluice implements.
const OPTIONS: &[Opt] = &[
    Opt::flag("batch", Some('b')),
    Opt::flag("full", Some('f')),
    Opt::flag("interactive", Some('i')),
    Opt::required("jobname", None).alias_of("name"),
    Opt::flag("me", None),
    Opt::required("name", Some('n')),
    Opt::required("partition", Some('p')),
    Opt::flag("quiet", Some('Q')),
    Opt::required("signal", Some('s')),
    Opt::required("state", Some('t')),
    Opt::required("user", Some('u')),
    Opt::flag("verbose", Some('v')),
];

/// Runs `scancel`.
pub fn main(args: Vec<String>) -> i32 {
    const ME: &str = "scancel";
    let mut req = CancelRequest::default();
    let mut filters = false;
    for item in Getopt::new(OPTIONS, args, Order::Permute) {
        let f = match item {
            Ok(Parsed::Opt(f)) => f,
            Ok(Parsed::Operand(ids)) => {
                for part in ids
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|s| !s.is_empty())
                {
                    match parse_job_arg(part) {
                        Some(v) => req.jobs.extend(v),
                        None => fail(ME, format!("Invalid job id {part}"), 1),
                    }
                }
                continue;
            }
            Err(e) => fail(ME, option_message(&e), 1),
        };
        match f.name() {
            "signal" => {
                let v = f.value();
                req.signal = Some(
                    signal_number(v)
                        .unwrap_or_else(|| fail(ME, format!("Unknown job signal: {v}"), 1)),
                );
            }
            "batch" => req.batch = true,
            "full" => {
                req.batch = true;
                req.full = true;
            }
            "user" => {
                req.user = f.value;
                filters = true;
            }
            "me" => {
                req.user = Some(current_user());
                filters = true;
            }
            "name" => {
                req.name = f.value;
                filters = true;
            }
            "partition" => {
                req.partition = f.value;
                filters = true;
            }
            "state" => {
                for s in f.value().split(',') {
                    req.states.push(JobState::parse(s).unwrap_or_else(|| {
                        fail(ME, format!("Invalid job state specified: {s}"), 1)
                    }));
                }
                filters = true;
            }
            _ => {}
        }
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
