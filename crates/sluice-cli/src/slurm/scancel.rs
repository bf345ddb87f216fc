//! `scancel`: cancel or signal jobs.

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_conf::options::signal_number;
use sluice_proto::types::{CancelRequest, Cancelled, JobState};

use super::common::{controller, describe, fail, parse_job_arg, Refusal, VERSION};
use super::help::{command_help, e, synopsis, Group};
use super::scancel_live::{
    display, held, listed, live_names, matching, names, passes, Asked, Held, ALREADY_DONE, BAD_JOB,
};
use super::squeue::current_user;

/// scancel's options: Slurm 22.05's table, in its order (which orders the candidates
/// of an ambiguous prefix), with its value kinds.
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::required("account", Some('A')),
    Opt::flag("batch", Some('b')),
    Opt::flag("ctld", None),
    Opt::flag("full", Some('f')),
    Opt::flag("help", None),
    Opt::flag("hurry", Some('H')),
    Opt::flag("interactive", Some('i')),
    Opt::required("cluster", None).alias_of("clusters"),
    Opt::required("clusters", Some('M')),
    Opt::required("jobname", None).alias_of("name"),
    Opt::flag("me", None),
    Opt::required("name", Some('n')),
    Opt::required("nodelist", Some('w')),
    Opt::required("partition", Some('p')),
    Opt::required("qos", Some('q')),
    Opt::flag("quiet", Some('Q')),
    Opt::required("reservation", Some('R')),
    Opt::required("sibling", None),
    Opt::required("signal", Some('s')),
    Opt::required("state", Some('t')),
    Opt::flag("usage", None),
    Opt::required("user", Some('u')),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
    Opt::required("wckey", None),
];

/// scancel's options Sluice accepts without effect.
pub(crate) const IGNORED: &[&str] = &[];

/// `--help`: the options Sluice acts on, in Slurm's layout.
#[rustfmt::skip]
pub(crate) const HELP: &[Group] = &[
    Group {
        title: "",
        entries: &[
            e("batch", "", "signal only the batch shell of each job"),
            e("full", "", "signal the batch shell and every step"),
            e("interactive", "", "ask before cancelling each job named"),
            e("me", "", "my jobs only"),
            e("name", "job_name", "jobs with this name only"),
            e("partition", "partition", "jobs in this partition only"),
            e("quiet", "", "say nothing of ids that name no live job"),
            e("signal", "name | integer", "send this signal rather than cancel"),
            e("state", "states", "jobs in these states only (PENDING, RUNNING,\n\
                 SUSPENDED)"),
            e("user", "user_name", "this user's jobs only"),
            e("version", "", "print the Slurm version and exit"),
            e("verbose", "", "name each job as it is signalled or cancelled"),
        ],
    },
    Group {
        title: "Help options:",
        entries: &[
            e("help", "", "this help"),
            e("usage", "", "a short summary of the options"),
        ],
    },
];

/// A job named by id: the job, and an array task.
type JobArg = (u64, Option<u32>);

/// The signal `-s` names, as Slurm's scancel reads it: a signal's name (`SIGUSR1`,
/// `usr1`) or any number but 0 (real-time signals included; one that is no signal is
/// sent all the same, and the kernel refuses it on the nodes, as Slurm's does).
fn scancel_signal(v: &str) -> Option<i32> {
    match v.trim().parse::<i64>() {
        Ok(n) if n > 0 && n <= i64::from(u16::MAX) => Some(n as i32),
        Ok(_) => None,
        Err(_) => signal_number(v),
    }
}

/// Runs `scancel`.
pub fn main(args: Vec<String>) -> i32 {
    const ME: &str = "scancel";
    let mut req = CancelRequest::default();
    let mut filters = false;
    let mut interactive = false;
    // Slurm's opt.verbose: -v adds one, -Q sets it to -1 (so their order counts).
    let mut level = 0i32;
    // `-b` (not `-f`, which Slurm's has_default_opt does not count).
    let mut batch_given = false;
    let mut operands = Vec::new();
    for item in Getopt::new(OPTIONS, args, Order::Permute) {
        let f = match item {
            Ok(Parsed::Opt(f)) => f,
            // Job ids, read once every option is (as scancel does).
            Ok(Parsed::Operand(ids)) => {
                operands.push(ids);
                continue;
            }
            Err(e) => Refusal::getopt(ME, &e).exit(),
        };
        match f.name() {
            "signal" => {
                let v = f.value();
                // scancel's own words, without its name.
                req.signal = Some(scancel_signal(v).unwrap_or_else(|| {
                    eprintln!("Unknown job signal: {v}");
                    std::process::exit(1)
                }));
            }
            "batch" => {
                req.batch = true;
                batch_given = true;
            }
            "full" => {
                req.batch = true;
                req.full = true;
            }
            "user" => {
                // A name or a uid, as Slurm's scancel takes it; someone unknown is an
                // error (its words, exit 1), not a filter that matches nothing.
                let u = f.value();
                match super::common::user_named(u) {
                    Some(user) => req.user = Some(user.name),
                    None => fail(ME, format!("Invalid user name: {u}"), 1),
                }
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
                        eprintln!("Invalid job state specified: {s}");
                        eprintln!("Valid job states are PENDING, RUNNING, and SUSPENDED");
                        std::process::exit(1)
                    }));
                }
                filters = true;
            }
            "interactive" => interactive = true,
            "verbose" => level += 1,
            "quiet" => level = -1,
            "version" => {
                println!("{VERSION}");
                return 0;
            }
            "help" => {
                let first = "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]\n";
                print!("{}", command_help(first, HELP, OPTIONS, 34, IGNORED));
                return 0;
            }
            "usage" => {
                let tail = "[job_id[_array_id][.step_id]]";
                print!("{}", synopsis(ME, HELP, OPTIONS, |_| true, tail));
                return 0;
            }
            // Accepted, no effect.
            n if IGNORED.contains(&n) => {}
            _ => Refusal::unsupported(ME, f.opt).exit(),
        }
    }
    // Components named `ID+N`, by the id they stand for.
    let mut spelled: Vec<(u64, String)> = Vec::new();
    // The ids as typed, which Slurm's scancel names them by when it asks straight away.
    let mut typed: Vec<(String, Vec<JobArg>)> = Vec::new();
    // Steps named on their own: (job, array task), step.
    let mut steps: Vec<((u64, Option<u32>), u32)> = Vec::new();
    for ids in &operands {
        for part in ids
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
        {
            if let Some((job_part, step)) = part.split_once('.') {
                // One step (`123.0`, `123_4.0`): Slurm's scancel takes a number only.
                let (Ok(step), Some(jobs)) = (step.parse::<u32>(), parse_job_arg(job_part)) else {
                    fail(ME, format!("Invalid job id {part}"), 1)
                };
                steps.extend(jobs.into_iter().map(|j| (j, step)));
                continue;
            }
            match parse_job_arg(part) {
                Some(v) => {
                    if part.contains('+') {
                        spelled.extend(v.iter().map(|j| (j.0, part.to_string())));
                    }
                    typed.push((part.to_string(), v.clone()));
                    req.jobs.extend(v)
                }
                None => fail(ME, format!("Invalid job id {part}"), 1),
            }
        }
    }
    if req.jobs.is_empty() && steps.is_empty() && !filters {
        fail(ME, "No job identification provided", 1);
    }
    if interactive {
        if filters {
            fail(
                ME,
                "--interactive asks about the jobs named by id only (not about filters' matches)",
                1,
            );
        }
        if !steps.is_empty() {
            fail(
                ME,
                "--interactive asks about whole jobs only (not about steps)",
                1,
            );
        }
        let (jobs, unknown) = confirmed(&req.jobs, level < 0, &mut std::io::stdin().lock());
        req.jobs = jobs;
        if req.jobs.is_empty() {
            return i32::from(unknown);
        }
        if unknown {
            // Asked about the others; the unknown ones still make the exit status 1.
            let client = controller();
            let asked = Asked {
                signal: req.signal,
                kind: "",
            };
            return match client
                .post::<_, Cancelled>("/v1/cancel", &req)
                .and_then(|done| {
                    super::scancel_refused::settle(&client, &req, &asked, level, None, done.refused)
                }) {
                Ok(worst) => worst.max(1) % 256,
                Err(e) => fail(ME, describe(&e), 1),
            };
        }
    }
    let client = controller();
    // As Slurm's scancel: with only ids given, the controller is asked straight away;
    // with any other option (a signal, even KILL, `-b`, a filter) the ids are first
    // checked against the jobs still live, and one that is not is an error (exit 1).
    let asked = Asked {
        signal: req.signal,
        kind: if req.full {
            "full "
        } else if req.batch {
            "batch "
        } else {
            ""
        },
    };
    // Named steps make Slurm's scancel check every id first.
    let verify = req.signal.is_some() || batch_given || filters || !steps.is_empty();
    let mut rc = 0;
    if !steps.is_empty() {
        // Named steps are named ids: filters narrow them (and the jobs named beside
        // them), they never choose jobs of their own.
        rc = super::scancel_steps::cancel(&client, &asked, &steps, level, &|j| passes(&req, j));
        if req.jobs.is_empty() {
            return rc;
        }
    }
    let records = (!req.jobs.is_empty() && (verify || level > 0))
        .then(|| listed(&client, &req.jobs))
        .flatten();
    let records = records.as_deref();
    if verify && !req.jobs.is_empty() {
        req.jobs.retain(|&job| {
            let live = held(records, job) == Held::Live;
            if !live {
                if level >= 0 {
                    let named = display(job);
                    eprintln!("{ME}: error: Kill job error on job id {named}: {BAD_JOB}");
                }
                rc = 1;
            }
            live
        });
        if req.jobs.is_empty() {
            return rc;
        }
    }
    // With -v after a filter alone: the jobs it chose, each said once the answer is in
    // beside its refusal, as Slurm's scancel says them job by job.
    let mut deferred = None;
    if level > 0 {
        if !verify {
            // Each id as typed, then what the controller answers for one that ended.
            for (part, jobs) in &typed {
                asked.say(part);
                let states: Vec<Held> = jobs.iter().map(|&j| held(records, j)).collect();
                let why = if states.contains(&Held::Live) {
                    continue;
                } else if states.contains(&Held::Ended) {
                    ALREADY_DONE
                } else {
                    BAD_JOB
                };
                eprintln!("{ME}: error: Kill job error on job id {part}: {why}");
            }
        } else if req.jobs.is_empty() {
            deferred = Some(matching(&client, &req));
        } else if let Some(records) = records {
            let chosen = |j: &_| req.jobs.iter().any(|&n| names(j, n)) && passes(&req, j);
            for (_, named) in live_names(records, chosen) {
                asked.say(&named);
            }
        }
    }
    if req.signal == Some(libc::SIGKILL) {
        // As Slurm: SIGKILL, to the steps, the batch shell or both, cancels the job
        // (`CANCELLED by UID`, SIGTERM then SIGKILL after KillWait).
        req.signal = None;
        req.batch = false;
        req.full = false;
    }
    let answer = client
        .post::<_, Cancelled>("/v1/cancel", &req)
        .and_then(|done| {
            super::scancel_refused::settle(&client, &req, &asked, level, deferred, done.refused)
        });
    match answer {
        // Slurm's scancel exits with the worst error's number, truncated: a job the
        // caller may not touch (ESLURM_ACCESS_DENIED, 2002) gives 210.
        Ok(worst) => rc.max(worst) % 256,
        Err(e) => {
            let msg = describe(&e);
            if msg.ends_with(sluice_ctld::state::HET_COMPONENT) {
                // As Slurm's scancel: the component as the user named it, and the
                // error's number (ESLURM_NOT_HET_JOB_LEADER, 2108) as the status.
                let msg = spelled.iter().fold(msg, |m, (id, as_named)| {
                    m.replace(&format!("job id {id}:"), &format!("job id {as_named}:"))
                });
                eprintln!("{ME}: error: {msg}");
                std::process::exit(2108 % 256);
            }
            // Slurm's scancel exits with the error's number, truncated: a job the
            // caller may not cancel (ESLURM_ACCESS_DENIED, 2002) gives 210.
            let denied = matches!(
                e,
                sluice_proto::ClientError::Status {
                    code: sluice_proto::error::ErrorCode::AccessDenied,
                    ..
                }
            );
            fail(ME, msg, if denied { 2002 % 256 } else { 1 })
        }
    }
}

/// The jobs of `jobs` the user confirms, asked one by one as Slurm's `scancel -i` asks
/// (`Cancel job_id=ID name=NAME partition=PART [y/n]? ` on stdout, an answer starting
/// with y or n on `input`, anything else asked again), and whether one was unknown or
/// had ended (`Kill job error on job id N: Invalid job id specified`, not asked about,
/// as Slurm's). The end of the input answers no (Slurm's asks again forever).
fn confirmed(
    jobs: &[(u64, Option<u32>)],
    quiet: bool,
    input: &mut impl std::io::BufRead,
) -> (Vec<(u64, Option<u32>)>, bool) {
    use std::io::Write;
    let client = controller();
    let mut keep = Vec::new();
    let mut unknown = false;
    for &(id, task) in jobs {
        let named = task.map_or(id.to_string(), |t| format!("{id}_{t}"));
        let record = client
            .get::<Vec<sluice_proto::types::JobRecord>>(&format!("/v1/jobs?jobs={named}"))
            .ok()
            .and_then(|r| r.into_iter().next());
        let Some(r) = record.filter(|r| !r.state.is_finished()) else {
            if !quiet {
                eprintln!("scancel: error: Kill job error on job id {named}: {BAD_JOB}");
            }
            unknown = true;
            continue;
        };
        if ask(&named, &r.desc.name, &r.partition, input) {
            keep.push((id, task));
        }
        let _ = std::io::stdout().flush();
    }
    (keep, unknown)
}

/// Asks once about one job (again until the answer starts with y or n); the end of the
/// input is no.
fn ask(job: &str, name: &str, partition: &str, input: &mut impl std::io::BufRead) -> bool {
    use std::io::Write;
    loop {
        print!("Cancel job_id={job} name={name} partition={partition} [y/n]? ");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                println!();
                return false;
            }
            Ok(_) => match line.chars().next() {
                Some('y' | 'Y') => return true,
                Some('n' | 'N') => return false,
                _ => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ask, scancel_signal};

    #[test]
    fn any_signal_number_but_zero_is_taken_as_slurms_scancel_takes_it() {
        assert_eq!(scancel_signal("99"), Some(99));
        assert_eq!(scancel_signal("40"), Some(40));
        assert_eq!(scancel_signal(" 12"), Some(12));
        assert_eq!(scancel_signal("SIGUSR1"), Some(10));
        assert_eq!(scancel_signal("usr2"), Some(12));
        assert_eq!(scancel_signal("0"), None);
        assert_eq!(scancel_signal("FOO"), None);
    }

    #[test]
    fn interactive_answers_are_read_as_slurms_scancel_reads_them() {
        let mut yes = "maybe\nYes please\n".as_bytes();
        assert!(ask("7", "job", "debug", &mut yes));
        let mut no = "n\n".as_bytes();
        assert!(!ask("7", "job", "debug", &mut no));
        let mut nothing = "".as_bytes();
        assert!(
            !ask("7", "job", "debug", &mut nothing),
            "the end of the input is no"
        );
    }
}
