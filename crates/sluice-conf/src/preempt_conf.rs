//! Preemption settings of slurm.conf: `PreemptType`, `PreemptMode` (global and per
//! partition), `PreemptExemptTime`, and the partition's `GraceTime`.
//!
//! Sluice preempts by cancelling or requeueing (see `sluice_core::preempt`):
//! `SUSPEND` and `GANG` are refused with a clear error rather than silently ignored.

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

/// `PreemptMode=OFF|CANCEL|REQUEUE` (any case; Slurm's comma list).
///
/// Errors: `SUSPEND` and `GANG` (not supported yet), unknown words, more than one
/// mode.
pub fn parse_preempt_mode(v: &str) -> Result<PreemptMode, String> {
    let mut mode = None;
    for word in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let m = match word.to_ascii_uppercase().as_str() {
            "OFF" => PreemptMode::Off,
            "CANCEL" => PreemptMode::Cancel,
            "REQUEUE" => PreemptMode::Requeue,
            "SUSPEND" | "GANG" => {
                return Err(format!(
                    "{} is not supported yet (use CANCEL or REQUEUE)",
                    word.to_ascii_uppercase()
                ))
            }
            _ => return Err(format!("unknown mode '{word}' (OFF, CANCEL or REQUEUE)")),
        };
        if mode.is_some_and(|old| old != m) {
            return Err(format!("more than one mode in '{v}'"));
        }
        mode = Some(m);
    }
    mode.ok_or_else(|| format!("unknown mode '{v}' (OFF, CANCEL or REQUEUE)"))
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

/// The cluster's settings from the global values (each already checked).
pub fn config(kind: Option<&str>, mode: Option<&str>, exempt: Option<&str>) -> PreemptConfig {
    PreemptConfig {
        kind: kind
            .and_then(|v| parse_preempt_type(v).ok())
            .unwrap_or_default(),
        mode: mode
            .and_then(|v| parse_preempt_mode(v).ok())
            .unwrap_or_default(),
        exempt_time: exempt.and_then(|v| parse_exempt_time(v).ok()).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            parse_preempt_mode("SUSPEND,GANG"),
            Err("SUSPEND is not supported yet (use CANCEL or REQUEUE)".into())
        );
        assert_eq!(
            parse_preempt_mode("kill"),
            Err("unknown mode 'kill' (OFF, CANCEL or REQUEUE)".into())
        );
        assert_eq!(parse_exempt_time("00:05:00"), Ok(300));
        assert_eq!(parse_exempt_time("-1"), Ok(0));
        assert_eq!(parse_grace_time("30"), Ok(30));
        assert!(parse_grace_time("soon").is_err());
    }
}
