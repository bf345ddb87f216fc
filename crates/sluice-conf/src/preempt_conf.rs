//! Preemption settings of slurm.conf: `PreemptType`, `PreemptMode` (global and per
//! partition), `PreemptExemptTime`, and the partition's `GraceTime`.
//!
//! Sluice preempts by cancelling, requeueing or suspending (see `sluice_core::preempt`
//! and `sluice_core::gang`); the cluster's `SUSPEND` needs `GANG`, as in Slurm.

use sluice_core::{PreemptConfig, PreemptMode, PreemptType};

use crate::duration::parse_time;

/// `PreemptType=preempt/none|preempt/partition_prio|preempt/qos`.
///
/// Errors: any other value.
pub fn parse_preempt_type(v: &str) -> Result<PreemptType, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "preempt/none" | "" => Ok(PreemptType::None),
        "preempt/partition_prio" => Ok(PreemptType::PartitionPrio),
        "preempt/qos" => Ok(PreemptType::Qos),
        _ => Err(format!(
            "unknown preemption plugin '{v}' (preempt/none, preempt/partition_prio or preempt/qos)"
        )),
    }
}

/// A partition's (or QOS's) `PreemptMode=OFF|CANCEL|REQUEUE|SUSPEND` (any case;
/// Slurm's comma list; `GANG` may stand beside them and means nothing here: it is the
/// cluster's).
///
/// Errors: unknown words, more than one mode.
pub fn parse_preempt_mode(v: &str) -> Result<PreemptMode, String> {
    parse_words(v).map(|(mode, _)| mode)
}

/// The cluster's `PreemptMode`: a mode and whether `GANG` is on. As in Slurm 22.05,
/// `SUSPEND` needs `GANG` (the gang scheduler is what resumes suspended jobs).
///
/// Errors: those of [`parse_preempt_mode`]; `SUSPEND` without `GANG`.
pub fn parse_cluster_preempt_mode(v: &str) -> Result<(PreemptMode, bool), String> {
    let (mode, gang) = parse_words(v)?;
    if mode == PreemptMode::Suspend && !gang {
        return Err("SUSPEND requires GANG too (PreemptMode=SUSPEND,GANG)".into());
    }
    Ok((mode, gang))
}

/// The mode among `v`'s words (`OFF` when only `GANG`), and whether `GANG` is one.
fn parse_words(v: &str) -> Result<(PreemptMode, bool), String> {
    let mut mode = None;
    let mut gang = false;
    for word in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let m = match word.to_ascii_uppercase().as_str() {
            "OFF" => PreemptMode::Off,
            "CANCEL" => PreemptMode::Cancel,
            "REQUEUE" => PreemptMode::Requeue,
            "SUSPEND" => PreemptMode::Suspend,
            "GANG" => {
                gang = true;
                continue;
            }
            _ => {
                return Err(format!(
                    "unknown mode '{word}' (OFF, CANCEL, REQUEUE, SUSPEND or GANG)"
                ))
            }
        };
        if mode.is_some_and(|old| old != m) {
            return Err(format!("more than one mode in '{v}'"));
        }
        mode = Some(m);
    }
    match mode {
        Some(m) => Ok((m, gang)),
        None if gang => Ok((PreemptMode::Off, true)),
        None => Err(format!(
            "unknown mode '{v}' (OFF, CANCEL, REQUEUE, SUSPEND or GANG)"
        )),
    }
}

/// `PreemptExemptTime` in seconds (Slurm's time format; `-1` or `0`: none).
///
/// Errors: a malformed time.
pub fn parse_exempt_time(v: &str) -> Result<i64, String> {
    Ok(parse_time(v)?.unwrap_or(0))
}

/// `GraceTime=` of a partition, seconds.
///
/// Errors: not a non-negative integer.
pub fn parse_grace_time(v: &str) -> Result<i64, String> {
    v.trim()
        .parse::<u32>()
        .map(i64::from)
        .map_err(|_| format!("expected seconds as an integer, found '{v}'"))
}

/// `SchedulerTimeSlice`: seconds (a 16-bit count). Below 5, Slurm's default (30)
/// applies, as Slurm does after its error message.
///
/// Errors: not such a number.
pub fn parse_time_slice(v: &str) -> Result<i64, String> {
    match v.trim().parse::<u16>() {
        Ok(n) if n >= 5 => Ok(i64::from(n)),
        Ok(_) => Ok(0),
        Err(_) => Err(format!("expected seconds as an integer, found '{v}'")),
    }
}

/// The cluster's settings from the global values (each already checked).
pub fn config(
    kind: Option<&str>,
    mode: Option<&str>,
    exempt: Option<&str>,
    time_slice: Option<&str>,
) -> PreemptConfig {
    let (mode, gang) = mode
        .and_then(|v| parse_cluster_preempt_mode(v).ok())
        .unwrap_or_default();
    PreemptConfig {
        kind: kind
            .and_then(|v| parse_preempt_type(v).ok())
            .unwrap_or_default(),
        mode,
        exempt_time: exempt.and_then(|v| parse_exempt_time(v).ok()).unwrap_or(0),
        gang,
        time_slice: time_slice
            .and_then(|v| parse_time_slice(v).ok())
            .unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_time_slice() {
        // Slurm's default (30, as 0 here) below 5 seconds, after its error message.
        assert_eq!(parse_time_slice("10"), Ok(10));
        assert_eq!(parse_time_slice("4"), Ok(0));
        assert!(parse_time_slice("ten").is_err());
        assert!(parse_time_slice("70000").is_err());
        let c = config(None, Some("GANG"), None, Some("5"));
        assert!(c.gang);
        assert_eq!((c.time_slice, c.slice_secs()), (5, 5));
        assert_eq!(config(None, Some("GANG"), None, None).slice_secs(), 30);
    }

    #[test]
    fn values() {
        assert_eq!(
            parse_preempt_type("preempt/partition_prio"),
            Ok(PreemptType::PartitionPrio)
        );
        assert_eq!(parse_preempt_type("PREEMPT/QOS"), Ok(PreemptType::Qos));
        assert_eq!(
            parse_preempt_type("preempt/job_prio"),
            Err("unknown preemption plugin 'preempt/job_prio' (preempt/none, preempt/partition_prio or preempt/qos)".into())
        );
        assert_eq!(parse_preempt_mode("requeue"), Ok(PreemptMode::Requeue));
        assert_eq!(parse_preempt_mode("CANCEL"), Ok(PreemptMode::Cancel));
        assert_eq!(
            parse_cluster_preempt_mode("SUSPEND,GANG"),
            Ok((PreemptMode::Suspend, true))
        );
        assert_eq!(
            parse_cluster_preempt_mode("suspend"),
            Err("SUSPEND requires GANG too (PreemptMode=SUSPEND,GANG)".into())
        );
        assert_eq!(
            parse_cluster_preempt_mode("GANG"),
            Ok((PreemptMode::Off, true))
        );
        assert_eq!(parse_preempt_mode("SUSPEND"), Ok(PreemptMode::Suspend));
        assert_eq!(
            parse_preempt_mode("kill"),
            Err("unknown mode 'kill' (OFF, CANCEL, REQUEUE, SUSPEND or GANG)".into())
        );
        assert_eq!(parse_exempt_time("00:05:00"), Ok(300));
        assert_eq!(parse_exempt_time("-1"), Ok(0));
        assert_eq!(parse_grace_time("30"), Ok(30));
        assert!(parse_grace_time("soon").is_err());
    }
}
