//! How long a submission's strings may be, checked before anything they name is
//! looked up (as slurmctld's `_test_job_desc_fields` checks them): a request cannot
//! make the controller keep arbitrarily long names, paths or scripts.

use sluice_proto::types::JobDescription;

/// Slurm's message for any string over its limit (`ESLURM_PATHNAME_TOO_LONG`).
pub(super) const TOO_LONG: &str = sluice_proto::error::PATHNAME_TOO_LONG;

/// Names, accounts, partitions, comments and the like.
const NAME_MAX: usize = 1024;
/// File and directory paths (`MAXPATHLEN`).
const PATH_MAX: usize = 4096;
/// A dependency list.
const DEPENDENCY_MAX: usize = 128 * 1024;
/// The command line that submitted the job.
const SUBMIT_LINE_MAX: usize = 1024 * 1024;

/// Checks the lengths, in bytes, of `desc`'s strings; `max_script` bounds the batch
/// script (`SchedulerParameters=max_script_size`, 4 MiB by default).
///
/// Errors: [`TOO_LONG`] for the first string over its limit.
pub(super) fn check(desc: &JobDescription, max_script: usize) -> Result<(), String> {
    let names = [
        &desc.account,
        &desc.comment,
        &desc.constraint,
        &desc.partition,
        &desc.qos,
        &desc.reservation,
        &desc.wckey,
    ];
    let paths = [&desc.output, &desc.error, &desc.input];
    let over = |s: Option<&str>, max: usize| s.is_some_and(|s| s.len() > max);
    let too_long = desc.name.len() > NAME_MAX
        || names.iter().any(|s| over(s.as_deref(), NAME_MAX))
        || paths.iter().any(|s| over(s.as_deref(), PATH_MAX))
        || desc.work_dir.len() > PATH_MAX
        || over(desc.dependency.as_deref(), DEPENDENCY_MAX)
        || over(desc.submit_line.as_deref(), SUBMIT_LINE_MAX)
        || desc.script.len() > max_script;
    if too_long {
        Err(TOO_LONG.into())
    } else {
        Ok(())
    }
}

/// Checks the lengths of an update's values (`scontrol update JobId=...`), as Slurm's
/// `update_job` checks them with the same limits. `changes` are `(key, value)` pairs in
/// Slurm's spelling.
///
/// Errors: [`TOO_LONG`] for the first value over its limit.
pub(super) fn check_update(changes: &[(String, String)]) -> Result<(), String> {
    let limit = |key: &str| match key.to_ascii_lowercase().as_str() {
        "jobname" | "name" | "comment" | "partition" | "account" | "qos" | "reservationname"
        | "wckey" | "features" | "prefer" | "licenses" | "mailuser" => Some(NAME_MAX),
        "stdout" | "stderr" | "stdin" | "workdir" => Some(PATH_MAX),
        "dependency" => Some(DEPENDENCY_MAX),
        _ => None,
    };
    if changes
        .iter()
        .any(|(k, v)| limit(k).is_some_and(|max| v.len() > max))
    {
        Err(TOO_LONG.into())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc() -> JobDescription {
        JobDescription {
            name: "a".repeat(NAME_MAX),
            comment: Some("c".repeat(NAME_MAX)),
            output: Some(format!("/{}", "o".repeat(PATH_MAX - 1))),
            script: "#!/bin/sh\n".into(),
            submit_line: Some("s".repeat(SUBMIT_LINE_MAX)),
            ..Default::default()
        }
    }

    #[test]
    fn strings_at_their_limits_are_kept() {
        assert_eq!(check(&desc(), 16), Ok(()));
    }

    #[test]
    fn one_byte_over_any_limit_is_refused() {
        let refused = |change: &dyn Fn(&mut JobDescription)| {
            let mut d = desc();
            change(&mut d);
            check(&d, 16)
        };
        assert_eq!(refused(&|d| d.name.push('a')), Err(TOO_LONG.into()));
        assert_eq!(
            refused(&|d| d.account = Some("x".repeat(NAME_MAX + 1))),
            Err(TOO_LONG.into())
        );
        assert_eq!(
            refused(&|d| d.output.as_mut().unwrap().push('o')),
            Err(TOO_LONG.into())
        );
        assert_eq!(
            refused(&|d| d.work_dir = "/".repeat(PATH_MAX + 1)),
            Err(TOO_LONG.into())
        );
        assert_eq!(
            refused(&|d| d.submit_line.as_mut().unwrap().push('s')),
            Err(TOO_LONG.into())
        );
        assert_eq!(
            refused(&|d| d.script = "#".repeat(17)),
            Err(TOO_LONG.into())
        );
        // Multi-byte characters count in bytes, as C's strlen counts them.
        assert_eq!(refused(&|d| d.name = "ä".repeat(513)), Err(TOO_LONG.into()));
    }

    #[test]
    fn an_update_is_held_to_the_same_lengths() {
        let change = |k: &str, n: usize| check_update(&[(k.to_string(), "x".repeat(n))]);
        assert_eq!(change("JobName", NAME_MAX), Ok(()));
        assert_eq!(change("JobName", NAME_MAX + 1), Err(TOO_LONG.into()));
        assert_eq!(change("Comment", NAME_MAX + 1), Err(TOO_LONG.into()));
        assert_eq!(change("WorkDir", PATH_MAX + 1), Err(TOO_LONG.into()));
        assert_eq!(
            change("TimeLimit", NAME_MAX + 1),
            Ok(()),
            "not a string Slurm bounds"
        );
    }
}
