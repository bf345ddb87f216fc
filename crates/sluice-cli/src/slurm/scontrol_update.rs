//! `scontrol update`: `NodeName=LIST State=... Reason=...` and
//! `PartitionName=P KEY=VALUE...` for operators, and `JobId=N KEY=VALUE...` for a job's
//! owner (or an operator).

use sluice_proto::time::parse_timestamp;
use sluice_proto::types::{Changed, JobRecord, JobUpdate, NodeUpdate, PartitionUpdate};
use sluice_proto::{Client, ClientError};

use super::common::{describe, now};
use super::update_keys;

/// What an update is about, as Slurm finds it: the first `KEY=VALUE` word naming a
/// node, a partition or a job.
enum Entity {
    Node,
    Partition,
    Job,
}

fn entity(words: &[String]) -> Option<Entity> {
    let prefix = |tag: &str, name: &str| {
        tag.len() >= 3 && tag.len() <= name.len() && name.starts_with(&tag.to_ascii_lowercase())
    };
    words.iter().find_map(|w| {
        let (tag, _) = w.split_once('=')?;
        if prefix(tag, "nodename") {
            Some(Entity::Node)
        } else if prefix(tag, "partitionname") {
            Some(Entity::Partition)
        } else if prefix(tag, "jobid") || prefix(tag, "jobname") {
            Some(Entity::Job)
        } else {
            None
        }
    })
}

/// Slurm's refusal of a word it cannot use; exit status 1.
fn refuse(first: String) -> i32 {
    eprintln!("{first}");
    eprintln!("Request aborted");
    1
}

/// Runs `scontrol update WORDS` (the words after `update`); the exit status.
///
/// Prints nothing on success, as Slurm's does. Words Slurm's `scontrol` does not
/// accept are refused before anything is sent, in its words (`Update of this parameter
/// is not supported: KEY=VALUE`, `Invalid input: WORD`, then `Request aborted`); the
/// controller's refusals print `slurm_update error: MESSAGE`, a job's `MESSAGE for
/// job ID` (an array's tasks a line per group, `ID_TASKS: MESSAGE`). Exit 1 on failure.
pub fn run(client: &Client, words: &[String]) -> i32 {
    match entity(words) {
        Some(Entity::Node) => update_node(client, words),
        Some(Entity::Job) => update_job(client, words),
        Some(Entity::Partition) => match partition_update(words) {
            Ok(body) => answer(client.post::<_, serde_json::Value>("/v1/partitions/update", &body)),
            Err(message) => {
                eprint!("{message}");
                1
            }
        },
        None => {
            eprintln!("No valid entity in update command");
            eprintln!(
                "Input line must include \"NodeName\", \"PartitionName\", \"Reservation\", \"JobId\", or \"SlurmctldDebug\""
            );
            1
        }
    }
}

fn update_node(client: &Client, words: &[String]) -> i32 {
    let mut pairs: Vec<(&'static str, String)> = Vec::new();
    for w in words {
        let Some((tag, value)) = w.split_once('=') else {
            return refuse(format!("Invalid input: {w}"));
        };
        match update_keys::node_key(tag) {
            Some(key) => pairs.push((key, value.to_string())),
            None => return refuse(format!("Update of this parameter is not supported: {w}")),
        }
    }
    let find = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone())
    };
    let nodes = find("NodeName").unwrap_or_default();
    let state = find("State").unwrap_or_default();
    let reason = find("Reason");
    let draining = ["DRAIN", "FAIL", "DOWN"]
        .iter()
        .any(|s| state.eq_ignore_ascii_case(s));
    if draining && reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
        eprintln!("{}", sluice_ctld::state::REASON_NEEDED);
        return 1;
    }
    let body = NodeUpdate {
        nodes,
        state,
        reason,
    };
    answer(client.post::<_, serde_json::Value>("/v1/nodes/update", &body))
}

/// What Slurm 22.05's `scontrol` adds after refusing a partition update's word: its
/// parser fails without setting an error number.
const NO_ERROR: &str = "slurm_update error: No error\n";

/// A partition update as Slurm 22.05's `scontrol` reads it: keys by their prefixes, the
/// values it checks itself (states, YES/NO) checked here with its messages. Errors:
/// what `scontrol` prints to stderr.
fn partition_update(words: &[String]) -> Result<PartitionUpdate, String> {
    let mut name = None;
    let mut changes = Vec::new();
    for w in words {
        let Some((tag, value)) = w.split_once('=') else {
            return Err(format!(
                "scontrol: error: Invalid input: {w}  Request aborted\n{NO_ERROR}"
            ));
        };
        // 22.05 has no `Nodes+=`/`Nodes-=`: such a word names no key.
        let Some(key) = update_keys::partition_key(tag) else {
            return Err(format!(
                "scontrol: error: Update of this parameter is not supported: {w}\n\nscontrol: error: Request aborted\n{NO_ERROR}"
            ));
        };
        let yes_no = |what: &str| {
            let v = value.to_ascii_lowercase();
            let ok = !v.is_empty() && ("yes".starts_with(&v) || "no".starts_with(&v));
            if ok {
                Ok(if "yes".starts_with(&v) { "YES" } else { "NO" }.to_string())
            } else {
                Err(format!(
                    "scontrol: error: Invalid input: {w}\nscontrol: error: Acceptable {what} values are YES and NO\n{NO_ERROR}"
                ))
            }
        };
        let value = match key {
            "PartitionName" => {
                name = Some(value.to_string());
                continue;
            }
            "State" => {
                let v = value.to_ascii_lowercase();
                ["INACTIVE", "DOWN", "UP", "DRAIN"]
                    .into_iter()
                    .find(|s| !v.is_empty() && s.to_ascii_lowercase().starts_with(&v))
                    .map(str::to_string)
                    .ok_or_else(|| {
                        format!(
                            "scontrol: error: Invalid input: {w}\nscontrol: error: Acceptable State values are UP, DOWN, DRAIN and INACTIVE\n{NO_ERROR}"
                        )
                    })?
            }
            "Default" => yes_no("Default")?,
            "MaxTime" | "DefaultTime" => {
                sluice_conf::duration::parse_time(value)
                    .map_err(|_| format!("scontrol: error: Invalid input {w}\n{NO_ERROR}"))?;
                value.to_string()
            }
            _ => value.to_string(),
        };
        if key == "Priority" {
            changes.push(("PriorityTier".to_string(), value.clone()));
            changes.push(("PriorityJobFactor".to_string(), value));
        } else {
            changes.push((key.to_string(), value));
        }
    }
    let Some(name) = name else {
        return Err("scontrol: error: PartitionName must be given.\n".into());
    };
    if changes.is_empty() {
        return Err("scontrol: error: No changes specified\n".into());
    }
    Ok(PartitionUpdate { name, changes })
}

/// The job an update names (if it does) and its `(key, value)` changes.
type JobChanges = (Option<String>, Vec<(String, String)>);

/// A job update as Slurm's `scontrol` reads it: the job named and the changes, keys
/// as the controller knows them (`Name` is sent as `JobName`, `EligibleTime` as
/// `StartTime` in Unix seconds, `NumNodes` as `MIN` or `MIN-MAX`). Errors: what
/// `scontrol` prints to stderr, and its exit status (0 where Slurm's parser gives up
/// without setting one, as on a node count that is no number).
fn job_changes(words: &[String]) -> Result<JobChanges, (String, i32)> {
    let refused = |first: String| (format!("{first}\nRequest aborted\n"), 1);
    let mut job: Option<String> = None;
    let mut changes: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        let (tag, value) = match w.split_once('=') {
            Some((t, v)) => (t.trim_end_matches('+').to_string(), v.to_string()),
            // `Nice` alone is Nice=100; otherwise a key's value may be the next word.
            None if w.len() >= 2 && "nice".starts_with(&w.to_ascii_lowercase()) => {
                changes.push(("Nice".into(), "100".into()));
                continue;
            }
            None if i < words.len() => {
                i += 1;
                (w.clone(), words[i - 1].clone())
            }
            None => return Err(refused(format!("Invalid input: {w}"))),
        };
        let Some(key) = update_keys::job_key(&tag) else {
            return Err(refused(format!(
                "Update of this parameter is not supported: {w}"
            )));
        };
        match key {
            "JobId" => job = Some(value),
            // Checked by scontrol itself (`+T`/`-T` lengthen or shorten the limit).
            "TimeLimit"
                if sluice_conf::duration::parse_time(value.trim_start_matches(['+', '-']))
                    .is_err() =>
            {
                return Err(("scontrol: error: Invalid TimeLimit value\n".into(), 1));
            }
            "StartTime" => match parse_timestamp(&value, now()) {
                Some(t) => changes.push((key.into(), t.to_string())),
                None => return Err((format!("scontrol: error: Invalid input: {w}\n"), 1)),
            },
            "NumNodes" => match node_count(&value) {
                Ok(count) => changes.push((key.into(), count)),
                Err(message) => return Err((format!("scontrol: error: {message}\n"), 0)),
            },
            _ => changes.push((key.into(), value)),
        }
    }
    if changes.is_empty() {
        return Err(("No changes specified\n".into(), 1));
    }
    Ok((job, changes))
}

/// A `NumNodes=` value as Slurm's `scontrol` reads it (`get_resource_arg_range`):
/// `0`, `ALL` (no change), `N` (the least count only) or `MIN-MAX`, counts with an
/// optional `k`/`m` multiple; empty or `*` is any count from one; what follows a
/// second `-` is not read. Errors: Slurm's message.
fn node_count(value: &str) -> Result<String, String> {
    const WHAT: &str = "requested node count";
    if value == "0" || value.eq_ignore_ascii_case("ALL") {
        return Ok(value.to_ascii_uppercase());
    }
    if value.is_empty() || value == "*" {
        return Ok(format!("1-{}", i32::MAX));
    }
    let invalid = || format!("Invalid numeric value \"{value}\" for {WHAT}.");
    // A count as `strtol` reads it (no digits: 0, nothing taken), times its multiple;
    // what follows must be the end or a `-`.
    let count = |s: &str| -> Result<(i64, usize), String> {
        let signed = usize::from(s.starts_with(['-', '+']));
        let digits = s[signed..].bytes().take_while(u8::is_ascii_digit).count();
        let (mut n, mut used) = if digits == 0 {
            (0, 0)
        } else {
            let n = s[signed..signed + digits]
                .parse::<i64>()
                .unwrap_or(i64::MAX);
            (if s.starts_with('-') { -n } else { n }, signed + digits)
        };
        match s.as_bytes().get(used) {
            Some(b'k' | b'K') => (n, used) = (n.saturating_mul(1024), used + 1),
            Some(b'm' | b'M') => (n, used) = (n.saturating_mul(1_048_576), used + 1),
            _ => {}
        }
        match s.as_bytes().get(used) {
            None | Some(b'-') => Ok((n, used)),
            Some(_) => Err(invalid()),
        }
    };
    let too_big = |n: i64| format!("Numeric argument ({n}) to big for {WHAT}.");
    let (min, used) = count(value)?;
    if min < 0 {
        return Err(invalid());
    }
    if min > i64::from(i32::MAX) {
        return Err(too_big(min));
    }
    let Some(rest) = value[used..].strip_prefix('-') else {
        return Ok(min.to_string());
    };
    let (max, _) = count(rest)?;
    if max <= 0 {
        return Err(invalid());
    }
    if max > i64::from(i32::MAX) {
        return Err(too_big(max));
    }
    Ok(format!("{min}-{max}"))
}

fn update_job(client: &Client, words: &[String]) -> i32 {
    let (job, changes) = match job_changes(words) {
        Ok(c) => c,
        Err((message, code)) => {
            eprint!("{message}");
            return code;
        }
    };
    let Some(job) = job else {
        eprintln!("scontrol: error: No job ID specified");
        return 1;
    };
    // A new size is for one job or task, named by its id alone (Slurm's
    // `_is_single_job`).
    if changes.iter().any(|(k, _)| k == "NumNodes") {
        if let Err(message) = single_job(client, &job) {
            eprintln!("scontrol: error: {message}");
            return 1;
        }
    }
    // Every id of the word must read as one, or none is sent (Slurm's `_is_job_id`).
    type Ids = Vec<(u64, Option<u32>)>;
    let parts: Option<Vec<(&str, Ids)>> = super::scontrol_jobs::ids_of(&job)
        .into_iter()
        // No step (`5.0`) nor throttle (`5_[1-3]%2`) in a job update's id.
        .map(|part| {
            let plain = !part.contains(['.', '%']);
            plain
                .then(|| super::common::parse_job_arg(part))
                .flatten()
                .map(|ids| (part, ids))
        })
        .collect();
    let Some(parts) = parts.filter(|p| p.iter().all(|(_, ids)| !ids.is_empty())) else {
        eprintln!("Invalid job id specified for job {job}");
        return 1;
    };
    let mut code = 0;
    for (part, ids) in parts {
        let tasks: Vec<u32> = ids.iter().filter_map(|&(_, t)| t).collect();
        let body = JobUpdate {
            task: tasks.first().copied(),
            tasks: if tasks.len() > 1 { tasks } else { Vec::new() },
            changes: changes.clone(),
        };
        match client.post::<_, Changed>(&format!("/v1/jobs/{}/update", ids[0].0), &body) {
            // An array's tasks answered a line per group (`A_1-6: MESSAGE`), as Slurm
            // answers for its array records.
            Ok(c) if !c.tasks.is_empty() => {
                for l in &c.tasks {
                    eprintln!("{l}");
                }
                code = 1;
            }
            Ok(_) => {}
            // A job's refusal names it, as Slurm's scontrol (`MESSAGE for job ID`).
            Err(e) => {
                eprintln!("{} for job {part}", describe(&e));
                code = 1;
            }
        }
    }
    code
}

/// Why `job` is no single job to resize: not `ID` or `ID_TASK`, no such job, or an
/// array of several records (Slurm's: its unstarted tasks are one) named whole.
fn single_job(client: &Client, job: &str) -> Result<(), String> {
    let (id, task) = match job.split_once('_') {
        Some((id, task)) => (id, Some(task)),
        None => (job, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(id) || task.is_some_and(|t| !digits(t)) {
        return Err(format!("Invalid job ID {job}"));
    }
    let records: Vec<JobRecord> = client.get(&format!("/v1/jobs?jobs={id}")).map_err(|e| {
        format!(
            "Could not load state information for job {job}: {}",
            describe(&e)
        )
    })?;
    match super::scontrol_jobs::slurm_records(&records) {
        // Slurm's load of an unknown job fails with `ESLURM_INVALID_JOB_ID`.
        0 => Err(format!(
            "Could not load state information for job {job}: Invalid job id specified"
        )),
        n if n > 1 && task.is_none() => Err("Job resizing not supported for job arrays".into()),
        _ => Ok(()),
    }
}

fn answer(r: Result<serde_json::Value, ClientError>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("slurm_update error: {}", describe(&e));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::job_changes;
    use crate::slurm::sample_file::read_dir;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn partition_updates_read_as_slurms_scontrol_reads_them() {
        use super::partition_update;
        let u = partition_update(&words("PartitionName=gpu st=d MaxT=10 Pri=3 Default=y")).unwrap();
        assert_eq!(u.name, "gpu");
        let pairs: Vec<(&str, &str)> = u
            .changes
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("State", "DOWN"),
                ("MaxTime", "10"),
                ("PriorityTier", "3"),
                ("PriorityJobFactor", "3"),
                ("Default", "YES")
            ]
        );
        let refused = |w: &str| partition_update(&words(w)).unwrap_err();
        assert_eq!(
            refused("PartitionName=gpu Nodes+=n2"),
            "scontrol: error: Update of this parameter is not supported: Nodes+=n2\n\nscontrol: error: Request aborted\nslurm_update error: No error\n"
        );
        assert_eq!(
            refused("PartitionName=gpu State=sleepy"),
            "scontrol: error: Invalid input: State=sleepy\nscontrol: error: Acceptable State values are UP, DOWN, DRAIN and INACTIVE\nslurm_update error: No error\n"
        );
        assert_eq!(
            refused("State=UP"),
            "scontrol: error: PartitionName must be given.\n"
        );
        assert_eq!(
            refused("PartitionName=gpu"),
            "scontrol: error: No changes specified\n"
        );
    }

    #[test]
    fn keys_slurm_does_not_know_are_refused_in_its_words() {
        // Slurm 22.05: `scontrol update JobId=N NoSuchKey=1` and `... NoSuchKey`.
        for (file, args) in [
            ("update_unknown_key", "JobId=7 NoSuchKey=1"),
            ("update_no_value", "JobId=7 NoSuchKey"),
        ] {
            let sample = &read_dir("scontrol", file)[0];
            assert_eq!(
                job_changes(&words(args)),
                Err((sample.stderr.clone(), 1)),
                "{file}"
            );
            assert_eq!(sample.code, 1);
        }
        // Refused wherever it comes: nothing is changed.
        assert_eq!(
            job_changes(&words("JobId=7 TimeLimit=10 NoSuchKey=1")),
            Err((
                "Update of this parameter is not supported: NoSuchKey=1\nRequest aborted\n".into(),
                1
            ))
        );
        assert_eq!(
            job_changes(&words("JobId=7")),
            Err(("No changes specified\n".into(), 1))
        );
    }

    #[test]
    fn node_counts_read_as_slurms_scontrol_reads_them() {
        use super::node_count;
        let ok = |v: &str| node_count(v).unwrap();
        assert_eq!(ok("2"), "2");
        assert_eq!(ok("1-2"), "1-2");
        assert_eq!(ok("2-1"), "2-1"); // the controller refuses it
        assert_eq!(ok("0"), "0");
        assert_eq!(ok("all"), "ALL");
        assert_eq!(ok("1k"), "1024");
        assert_eq!(ok("*"), "1-2147483647");
        // What follows a second `-` is not read, as `get_resource_arg_range` reads.
        assert_eq!(ok("1-2-3"), "1-2");
        for bad in ["x", "2x", "1-", "1-0", "-1", "-", "1-x"] {
            assert_eq!(
                node_count(bad),
                Err(format!(
                    "Invalid numeric value \"{bad}\" for requested node count."
                )),
                "{bad}"
            );
        }
        assert_eq!(
            node_count("3000000000"),
            Err("Numeric argument (3000000000) to big for requested node count.".into())
        );
        // No overflow, however large.
        assert!(node_count("99999999999999999999m").is_err());
        assert!(node_count("1-99999999999999m").is_err());
        // Slurm 22.05: the word is refused, nothing is sent, and the exit status is 0.
        assert_eq!(
            job_changes(&words("JobId=7 TimeLimit=5 NumNodes=x")),
            Err((
                "scontrol: error: Invalid numeric value \"x\" for requested node count.\n".into(),
                0
            ))
        );
    }

    #[test]
    fn known_keys_go_by_their_controller_names() {
        assert_eq!(
            job_changes(&words("JobId=7 TimeL=25 Name=after Comment hello Nice")),
            Ok((
                Some("7".to_string()),
                vec![
                    ("TimeLimit".to_string(), "25".to_string()),
                    ("JobName".into(), "after".into()),
                    ("Comment".into(), "hello".into()),
                    ("Nice".into(), "100".into()),
                ]
            ))
        );
    }
}
