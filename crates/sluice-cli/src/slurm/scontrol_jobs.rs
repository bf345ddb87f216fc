//! `scontrol hold|uhold|release|requeue|requeuehold`: the words after the verb, as
//! Slurm's `scontrol` reads them, and its answers.
//!
//! Each word is acted on by itself: a word that is no job is refused (`Invalid job id
//! specified for job WORD`) and the others are still carried out, the command then
//! exiting 1. A word names jobs by id (`ID`, `ID_TASK`, `ID_[1-3]`, `LEADER+OFFSET`,
//! lists of them, `JobId=`/`Job=` before any), or, for the hold verbs, by name
//! (`Name=`/`JobName=`: every job of that name the caller sees). `requeue` and
//! `requeuehold` take their flags first (`Incomplete`, `State=SpecialExit`).

use std::collections::HashSet;

use sluice_proto::types::{
    compact_indices, Changed, JobRecord, JobState, RequeueFlags, TaskSelection,
};
use sluice_proto::Client;

use super::common::{describe, parse_job_arg};

/// Slurm's `ESLURM_INVALID_JOB_ID`.
const INVALID: &str = "Invalid job id specified";

/// One request's outcome: Slurm's lines for an array's tasks, or the refusal.
type Answer = Result<Vec<String>, String>;

/// `scontrol hold|uhold|holdu|release WORD...`.
pub fn hold(client: &Client, verb: &str, words: &[String]) -> i32 {
    let action = if verb == "release" { "release" } else { "hold" };
    let user = verb == "uhold" || verb == "holdu";
    let mut code = 0;
    for word in words {
        let word = strip_id_key(word);
        let targets = match name_of(word).map(|name| named(client, name)) {
            Some(Ok(t)) => Some(t),
            Some(Err(msg)) => {
                eprintln!("slurm_load_jobs error: {msg}");
                code = 1;
                continue;
            }
            None => grouped(word, false),
        };
        let Some(targets) = targets else {
            eprintln!("{INVALID} for job {word}");
            eprintln!("slurm_suspend error: {INVALID}");
            code = 1;
            continue;
        };
        // The word fails on a refusal (or a job named that no longer waits, Slurm's
        // `ESLURM_JOB_NOT_PENDING`); Slurm's closing line then repeats the last
        // request's error, `No error` when that one was carried out.
        let mut failed = false;
        let mut last: Option<String> = None;
        let mut lines = Vec::new();
        for t in targets {
            failed |= t.done;
            let body = TaskSelection {
                user,
                ..TaskSelection::of_tasks(t.tasks)
            };
            let answer = send(client, &format!("/v1/jobs/{}/{action}", t.job), &body);
            last = answer.as_ref().err().cloned();
            print_lines(report(answer, &t.shown, &mut failed), &mut lines);
        }
        if !lines.is_empty() {
            code = 1;
        }
        if failed {
            code = 1;
            eprintln!(
                "slurm_suspend error: {}",
                last.as_deref().unwrap_or("No error")
            );
        }
    }
    code
}

/// `scontrol requeue|requeuehold [FLAGS] WORD...`.
pub fn requeue(client: &Client, hold: bool, words: &[String]) -> i32 {
    let mut flags = RequeueFlags {
        hold,
        ..Default::default()
    };
    let mut rest = words;
    while let Some(word) = rest.first() {
        match flag(word) {
            Some(Flag::Incomplete) => flags.incomplete = true,
            Some(Flag::SpecialExit) => flags.special_exit = true,
            None => break,
        }
        rest = &rest[1..];
    }
    let mut code = 0;
    for word in rest {
        // `JobId=`/`Job=` only for requeue: Slurm's requeuehold takes ids alone.
        let word = if hold {
            word.as_str()
        } else {
            strip_id_key(word)
        };
        // A heterogeneous job is requeued by its leader's id, never `ID+N`.
        let Some(targets) = grouped(word, true) else {
            eprintln!("{INVALID} for job {word}");
            code = 1;
            continue;
        };
        let mut failed = false;
        let mut lines = Vec::new();
        for t in targets {
            let body = TaskSelection {
                requeue: flags,
                ..TaskSelection::of_tasks(t.tasks)
            };
            let answer = send(client, &format!("/v1/jobs/{}/requeue", t.job), &body);
            print_lines(report(answer, &t.shown, &mut failed), &mut lines);
        }
        if !lines.is_empty() || failed {
            code = 1;
        }
    }
    code
}

/// The ids of a word, split at its commas outside brackets (`1,2_[3,5]`).
pub(super) fn ids_of(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in word.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&word[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&word[start..]);
    out
}

/// A job (or some of an array's tasks) a word names, and how an error names it.
#[derive(Debug, PartialEq)]
struct Target {
    job: u64,
    /// The array's tasks named (none: the job, or the whole array).
    tasks: Vec<u32>,
    shown: String,
    /// Named by its name, and no longer waiting.
    done: bool,
}

/// The requests a word of ids makes (`12,13_[1-2],14+1`), as Slurm's `scontrol` sends
/// them: one per id, an array's tasks named by one id together (answered a line per
/// group of tasks alike), each with the id as written for its errors. None unless every
/// id reads as one (Slurm then refuses the whole word and acts on none of it);
/// `leaders_only`: `LEADER+OFFSET` is no id.
fn grouped(word: &str, leaders_only: bool) -> Option<Vec<Target>> {
    let mut out = Vec::new();
    for part in ids_of(word) {
        if leaders_only && part.contains('+') {
            return None;
        }
        let ids = parse_job_arg(part)?;
        out.push(Target {
            job: ids.first()?.0,
            tasks: ids.iter().filter_map(|&(_, t)| t).collect(),
            shown: part.to_string(),
            done: false,
        });
    }
    Some(out)
}

/// A requeue flag word: Slurm takes any leading part of `Incomplete`, and
/// `State=SpecialExit` (or `State=SE`).
enum Flag {
    Incomplete,
    SpecialExit,
}

fn flag(word: &str) -> Option<Flag> {
    let lower = word.to_ascii_lowercase();
    if "incomplete".starts_with(&lower) {
        return Some(Flag::Incomplete);
    }
    let state = lower.strip_prefix("state=")?;
    (state.starts_with("specialexit") || state.starts_with("se")).then_some(Flag::SpecialExit)
}

/// `word` after `key` (`JobId=`, any case), if it starts with it.
fn after_key<'a>(word: &'a str, key: &str) -> Option<&'a str> {
    word.get(..key.len())
        .filter(|p| p.eq_ignore_ascii_case(key))
        .map(|_| &word[key.len()..])
}

/// A word without its `JobId=` or `Job=`.
fn strip_id_key(word: &str) -> &str {
    ["jobid=", "job="]
        .iter()
        .find_map(|key| after_key(word, key))
        .unwrap_or(word)
}

/// The name a `Name=` or `JobName=` word gives.
fn name_of(word: &str) -> Option<&str> {
    ["name=", "jobname="]
        .iter()
        .find_map(|key| after_key(word, key))
}

/// The jobs named `name` the caller sees, as Slurm's `scontrol` goes through them (in
/// id order). An array's started tasks are passed over; its unstarted record is
/// named whole, as Slurm names it (`A_1-3`), and so changed whole.
fn named(client: &Client, name: &str) -> Result<Vec<Target>, String> {
    let jobs: Vec<JobRecord> = client.get("/v1/jobs").map_err(|e| describe(&e))?;
    Ok(targets_named(jobs, name))
}

/// [`named`]'s targets among the records listed.
fn targets_named(mut jobs: Vec<JobRecord>, name: &str) -> Vec<Target> {
    jobs.retain(|j| j.desc.name == name);
    jobs.sort_by_key(|j| j.id);
    let mut out = Vec::new();
    let task = |array: u64, t: u32| Target {
        job: array,
        tasks: vec![t],
        shown: format!("{array}_{t}"),
        done: false,
    };
    let (split, held_by_record) = folded(&jobs);
    for j in &jobs {
        let pending = j.state == JobState::Pending;
        match (&j.array_pending, j.array) {
            // The array's record of unstarted tasks, named whole (`A_1-3`) and so
            // changed whole; a cancelled array's is answered for
            // (`A_1-3: Job has already finished`).
            (Some((tasks, _)), Some((array, _))) => {
                let tasks: Vec<u32> = tasks
                    .iter()
                    .copied()
                    .filter(|&t| !split.contains(&(array, t)))
                    .collect();
                if !tasks.is_empty() {
                    out.push(Target {
                        job: array,
                        shown: format!("{array}_{}", compact_indices(&tasks)),
                        tasks,
                        done: !pending,
                    });
                }
            }
            (_, Some(key)) if pending && !held_by_record.contains(&key) => {
                out.push(task(key.0, key.1))
            }
            (_, Some(_)) => {}
            (_, None) => out.push(Target {
                job: j.id,
                tasks: Vec::new(),
                shown: j.id.to_string(),
                done: !pending,
            }),
        }
    }
    out
}

/// Array tasks, as `(array, task)`.
pub(super) type TaskSet = HashSet<(u64, u32)>;

/// Of the records listed, the array tasks split from their array's record (records of
/// their own), and those still held by it: listed each, but one record with it for
/// Slurm, named through it.
pub(super) fn folded(jobs: &[JobRecord]) -> (TaskSet, TaskSet) {
    let split: TaskSet = jobs
        .iter()
        .filter(|j| j.split)
        .filter_map(|j| j.array)
        .collect();
    let mut held_by_record = HashSet::new();
    for j in jobs {
        if let (Some((tasks, _)), Some((array, _))) = (&j.array_pending, j.array) {
            held_by_record.extend(
                tasks
                    .iter()
                    .map(|&t| (array, t))
                    .filter(|k| !split.contains(k)),
            );
        }
    }
    (split, held_by_record)
}

/// How many records Slurm would hold for the records listed: an array's unstarted
/// tasks are one.
pub(super) fn slurm_records(jobs: &[JobRecord]) -> usize {
    let (_, held_by_record) = folded(jobs);
    jobs.iter()
        .filter(|j| {
            j.array_pending.is_some() || !j.array.is_some_and(|k| held_by_record.contains(&k))
        })
        .count()
}

/// Sends a job verb.
fn send(client: &Client, path: &str, body: &TaskSelection) -> Answer {
    client
        .post::<_, Changed>(path, body)
        .map(|c| c.tasks)
        .map_err(|e| describe(&e))
}

/// Prints a refusal as Slurm does (`MESSAGE for job WORD`); returns an array's lines.
fn report(answer: Answer, shown: &str, failed: &mut bool) -> Vec<String> {
    answer.unwrap_or_else(|msg| {
        eprintln!("{msg} for job {shown}");
        *failed = true;
        Vec::new()
    })
}

/// Prints an array's lines as its request is answered, as Slurm does id by id, each
/// line once for the word (the tasks a `Name=` word names are asked one by one, and
/// may be answered for the array's record each time): `seen` keeps those printed.
fn print_lines(lines: Vec<String>, seen: &mut Vec<String>) {
    for l in lines {
        if !seen.contains(&l) {
            eprintln!("{l}");
            seen.push(l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requeue_flags_read_as_slurms() {
        assert!(matches!(flag("Incomplete"), Some(Flag::Incomplete)));
        assert!(matches!(flag("inc"), Some(Flag::Incomplete)));
        assert!(matches!(flag("State=SpecialExit"), Some(Flag::SpecialExit)));
        assert!(matches!(flag("state=se"), Some(Flag::SpecialExit)));
        assert!(flag("State=Pending").is_none());
        assert!(flag("123").is_none());
        assert!(flag("incompleteness").is_none());
    }

    #[test]
    fn id_and_name_keys_come_off() {
        assert_eq!(strip_id_key("JobId=12"), "12");
        assert_eq!(strip_id_key("job=12_3"), "12_3");
        assert_eq!(strip_id_key("12"), "12");
        assert_eq!(name_of("Name=train"), Some("train"));
        assert_eq!(name_of("JOBNAME=a=b"), Some("a=b"));
        assert_eq!(name_of("JobId=5"), None);
        // Not ASCII: no panic, no key.
        assert_eq!(strip_id_key("été"), "été");
        assert_eq!(name_of("näme=x"), None);
    }

    #[test]
    fn ids_split_at_commas_outside_brackets() {
        assert_eq!(ids_of("1,2_[3,5],4"), ["1", "2_[3,5]", "4"]);
        assert_eq!(ids_of("7"), ["7"]);
        let target = |job, tasks: &[u32], shown: &str| Target {
            job,
            tasks: tasks.to_vec(),
            shown: shown.to_string(),
            done: false,
        };
        // One request per id, an array's tasks together.
        assert_eq!(
            grouped("4_[2,3],5,6_7,8+1", false).unwrap(),
            [
                target(4, &[2, 3], "4_[2,3]"),
                target(5, &[], "5"),
                target(6, &[7], "6_7"),
                target(9, &[], "8+1")
            ]
        );
        assert!(grouped("4+1", true).is_none());
        // Brackets around the whole task list or none, as Slurm reads an id.
        assert!(grouped("4_[1", false).is_none());
        assert!(grouped("4_1]", false).is_none());
        assert_eq!(grouped("4_[1-2]", false).unwrap()[0].tasks, [1, 2]);
        assert!(grouped("4,bogus", false).is_none());
    }

    #[test]
    fn a_name_names_an_arrays_unstarted_record_whole() {
        // Array 10 named `train` of tasks 0-4: task 0 runs (record 11), task 1 was
        // changed on its own (record 12), tasks 2-4 wait in the array's record (10; 13
        // and 14 are listed for tasks 2 and 3). Array 20 of the same name was cancelled
        // before its tasks 0-1 started; job 30 of that name ended; job 31 is another's.
        let rec = |id, array: Option<(u64, u32)>, state, name: &str| {
            let mut r = JobRecord {
                id,
                array,
                state,
                ..Default::default()
            };
            r.desc.name = name.into();
            r
        };
        use JobState::{Cancelled, Completed, Pending, Running};
        let mut own = rec(10, Some((10, 4)), Pending, "train");
        own.array_pending = Some((vec![1, 2, 3, 4], None));
        let mut apart = rec(12, Some((10, 1)), Pending, "train");
        apart.split = true;
        let mut cancelled = rec(20, Some((20, 1)), Cancelled, "train");
        cancelled.array_pending = Some((vec![0, 1], None));
        let jobs = vec![
            rec(31, None, Pending, "other"),
            rec(30, None, Completed, "train"),
            cancelled,
            rec(14, Some((10, 3)), Pending, "train"),
            rec(13, Some((10, 2)), Pending, "train"),
            apart,
            rec(11, Some((10, 0)), Running, "train"),
            own,
        ];
        let target = |job, tasks: &[u32], shown: &str, done| Target {
            job,
            tasks: tasks.to_vec(),
            shown: shown.to_string(),
            done,
        };
        // Slurm's records: 10 (tasks 2-4), 11, 12, 20, 30, 31.
        assert_eq!(slurm_records(&jobs), 6);
        assert_eq!(
            targets_named(jobs, "train"),
            [
                target(10, &[2, 3, 4], "10_2-4", false),
                target(10, &[1], "10_1", false),
                target(20, &[0, 1], "20_0-1", true),
                target(30, &[], "30", true),
            ]
        );
    }
}
