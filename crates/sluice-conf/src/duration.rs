//! Slurm's duration and memory syntax: the one place durations are read and printed.
//!
//! Durations are read in Slurm's time-limit syntax ([`parse_time`] in seconds,
//! [`parse_minutes`] for sacctmgr's minute limits) and printed the ways Slurm prints
//! them: [`format_time`] (`[D-]HH:MM:SS` or `UNLIMITED`: limits, elapsed and run
//! times in sacct, scontrol, sacctmgr), [`format_compact`] (squeue's and sinfo's
//! `M:SS`, `H:MM:SS`, `D-HH:MM:SS`), [`format_span`] (Sluice's own words, `2h 30m`).
//! Points in time are `sluice_proto::time`'s.

use sluice_core::time::format_duration;

/// The longest finite time limit, in seconds: `0xfffffffd` minutes (about 8166 years).
/// Slurm keeps time limits as 32-bit minutes, the two values above this one meaning
/// `NO_VAL` and `INFINITE`. Bounding limits here also keeps every accepted limit
/// printable by [`format_time`] in a form [`parse_time`] reads back.
pub const MAX_TIME_SECS: i64 = 0xffff_fffd * 60;

/// Whether `t` (trimmed) is one of Slurm's words for no limit: `UNLIMITED`,
/// `INFINITE` (any case) or `-1`.
fn is_unlimited(t: &str) -> bool {
    t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite") || t == "-1"
}

/// Seconds in `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M` or `D-H:M:S` (hours may exceed 24);
/// `None` for anything else. Each field is at most 12 digits, so the sum cannot
/// overflow.
fn clock_secs(t: &str) -> Option<i64> {
    let num = |x: &str| -> Option<i64> {
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) || x.len() > 12 {
            return None;
        }
        x.parse::<i64>().ok()
    };
    if let Some((d, rest)) = t.split_once('-') {
        let days = num(d)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (h, m, sec) = match parts.as_slice() {
            [h] => (num(h)?, 0, 0),
            [h, m] => (num(h)?, num(m)?, 0),
            [h, m, s] => (num(h)?, num(m)?, num(s)?),
            _ => return None,
        };
        Some(days * 86400 + h * 3600 + m * 60 + sec)
    } else {
        let parts: Vec<&str> = t.split(':').collect();
        match parts.as_slice() {
            [m] => Some(num(m)? * 60),
            [m, s] => Some(num(m)? * 60 + num(s)?),
            [h, m, s] => Some(num(h)? * 3600 + num(m)? * 60 + num(s)?),
            _ => None,
        }
    }
}

/// Parses a Slurm time limit (`--time`, `MaxTime=`, `DefaultTime=`) into seconds;
/// `None` means unlimited.
///
/// Accepted forms (Slurm's `sbatch(1)`): `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`,
/// `D-H:M:S`, and `UNLIMITED`, `INFINITE`, `-1` for no limit. Hours may exceed 24.
/// `0` is, as in Slurm, no limit.
///
/// Errors: anything else, or a limit over [`MAX_TIME_SECS`], with the text that was given.
pub fn parse_time(s: &str) -> Result<Option<i64>, String> {
    let t = s.trim();
    if is_unlimited(t) {
        return Ok(None);
    }
    let secs = clock_secs(t)
        .filter(|&secs| secs <= MAX_TIME_SECS)
        .ok_or_else(|| bad_time(s))?;
    Ok(if secs == 0 { None } else { Some(secs) })
}

/// Parses a wall-time limit as sacctmgr takes it, in minutes: the forms of
/// [`parse_time`] (`90` is minutes, `MM:SS` rounds up to a whole minute), `0` being
/// zero minutes; `-1`, `UNLIMITED` or `INFINITE`: `None`.
///
/// Errors: anything else, or more minutes than 32 bits hold.
pub fn parse_minutes(s: &str) -> Result<Option<u32>, String> {
    let t = s.trim();
    if is_unlimited(t) {
        return Ok(None);
    }
    let secs = clock_secs(t).ok_or_else(|| bad_time(s))?;
    u32::try_from((secs + 59) / 60)
        .map(Some)
        .map_err(|_| bad_time(s))
}

fn bad_time(s: &str) -> String {
    format!("invalid time specification '{s}'")
}

/// A duration as Slurm prints limits and elapsed times (its `secs2time_str`):
/// `[D-]HH:MM:SS` ([`sluice_core::time::format_duration`], which the core's
/// explanations print with too), or `UNLIMITED` for `None`. A negative duration (a
/// clock that went back) prints as zero.
pub fn format_time(secs: Option<i64>) -> String {
    secs.map_or_else(|| "UNLIMITED".to_string(), format_duration)
}

/// Minutes as sacctmgr prints a wall limit: [`format_time`] of them (`02:00:00`,
/// `1-00:00:00`).
pub fn format_minutes(mins: u32) -> String {
    format_time(Some(i64::from(mins) * 60))
}

/// A duration as squeue and sinfo print run times and limits (squeue's
/// `_print_secs`): `0:35`, `1:02:03`, `1-02:03:04`. Negative durations print as zero.
pub fn format_compact(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86400, s % 86400 / 3600, s % 3600 / 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{sec:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{sec:02}")
    } else {
        format!("{m}:{sec:02}")
    }
}

/// A duration in words as people read it (Sluice's explanations, not Slurm's): `2h
/// 30m`, `45s`, `1d 1s`; zero and negative durations are `0s`.
pub fn format_span(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    let mut parts = Vec::new();
    if d > 0 {
        parts.push(format!("{d}d"));
    }
    if h > 0 {
        parts.push(format!("{h}h"));
    }
    if m > 0 {
        parts.push(format!("{m}m"));
    }
    if sec > 0 || parts.is_empty() {
        parts.push(format!("{sec}s"));
    }
    parts.join(" ")
}

/// The largest memory size, in MiB: `2^63 - 1`. Slurm reads sizes as signed 64-bit
/// numbers and rejects what does not fit; its top bit marks "per CPU" in its records.
pub const MAX_MEM_MIB: u64 = i64::MAX as u64;

/// Parses a memory size into MiB: `100` (MiB), `100M`, `4G`, `4GB`, `2g`, `3584MB`,
/// `1T`, `512K` (rounded up to whole MiB).
///
/// Errors: a missing or non-numeric amount, an unknown unit, more than [`MAX_MEM_MIB`].
pub fn parse_mem_mib(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || format!("invalid memory specification '{s}'");
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let unit = unit.to_ascii_uppercase();
    let unit = unit.strip_suffix('B').unwrap_or(&unit);
    let mib = match unit {
        "" | "M" => n,
        "K" => n.div_ceil(1024),
        "G" => n.checked_mul(1024).ok_or_else(bad)?,
        "T" => n.checked_mul(1024 * 1024).ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    if mib > MAX_MEM_MIB {
        return Err(bad());
    }
    Ok(mib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_forms() {
        let cases = [
            ("30", 1800),
            ("1:30", 90),
            ("2:00:00", 7200),
            ("48:00:00", 172800),
            ("1-0", 86400),
            ("7-0", 604800),
            ("1-2:30", 95400),
            ("1-02:03:04", 93784),
        ];
        for (s, want) in cases {
            assert_eq!(parse_time(s), Ok(Some(want)), "{s}");
        }
        for s in ["UNLIMITED", "infinite", "-1", "0"] {
            assert_eq!(parse_time(s), Ok(None), "{s}");
        }
        for s in ["", "abc", "1:2:3:4", "1-", "-5", "1.5", "1-2:3:4:5"] {
            assert!(parse_time(s).is_err(), "{s}");
        }
        assert_eq!(
            parse_time("1:xx").unwrap_err(),
            "invalid time specification '1:xx'"
        );
    }

    #[test]
    fn time_round_trips_through_slurm_format() {
        assert_eq!(format_time(Some(93784)), "1-02:03:04");
        assert_eq!(format_time(Some(3600)), "01:00:00");
        assert_eq!(format_time(None), "UNLIMITED");
        for s in [59, 3600, 86399, 86400, 1_000_000] {
            assert_eq!(parse_time(&format_time(Some(s))), Ok(Some(s)));
        }
    }

    #[test]
    fn negative_durations_print_as_zero() {
        assert_eq!(format_time(Some(-5)), "00:00:00");
        assert_eq!(format_compact(-5), "0:00");
        assert_eq!(format_span(-5), "0s");
    }

    #[test]
    fn compact_durations_as_squeue_prints_them() {
        let cases = [
            (0, "0:00"),
            (35, "0:35"),
            (59 * 60 + 59, "59:59"),
            (3600, "1:00:00"),
            (3723, "1:02:03"),
            (86399, "23:59:59"),
            (86400, "1-00:00:00"),
            (93784, "1-02:03:04"),
            (100 * 86400, "100-00:00:00"),
        ];
        for (secs, want) in cases {
            assert_eq!(format_compact(secs), want, "{secs}");
            // Every compact form is also a time limit that reads back.
            if secs > 0 {
                assert_eq!(parse_time(want), Ok(Some(secs)), "{want}");
            }
        }
    }

    #[test]
    fn spans_in_words() {
        assert_eq!(format_span(0), "0s");
        assert_eq!(format_span(45), "45s");
        assert_eq!(format_span(9000), "2h 30m");
        assert_eq!(format_span(86_401), "1d 1s");
        assert_eq!(format_span(90_061), "1d 1h 1m 1s");
    }

    #[test]
    fn wall_limits_in_minutes_share_the_time_syntax() {
        assert_eq!(parse_minutes("2:00:00"), Ok(Some(120)));
        assert_eq!(parse_minutes("90"), Ok(Some(90)));
        assert_eq!(parse_minutes("1-00:00:00"), Ok(Some(1440)));
        assert_eq!(parse_minutes("1:30"), Ok(Some(2)), "seconds round up");
        assert_eq!(
            parse_minutes("0"),
            Ok(Some(0)),
            "zero minutes, not unlimited"
        );
        for s in ["-1", "UNLIMITED", "infinite"] {
            assert_eq!(parse_minutes(s), Ok(None), "{s}");
        }
        for s in ["abc", "", "1:2:3:4", "4294967296", "1.5"] {
            assert_eq!(
                parse_minutes(s),
                Err(format!("invalid time specification '{s}'"))
            );
        }
        assert_eq!(parse_minutes("4294967295"), Ok(Some(u32::MAX)));
        assert_eq!(format_minutes(120), "02:00:00");
        assert_eq!(format_minutes(1440), "1-00:00:00");
        for m in [1, 59, 60, 1439, 1440, 100_000, u32::MAX] {
            assert_eq!(parse_minutes(&format_minutes(m)), Ok(Some(m)), "{m}");
        }
    }

    #[test]
    fn limits_past_slurms_largest_are_refused() {
        assert_eq!(parse_time("4294967293"), Ok(Some(MAX_TIME_SECS)));
        assert_eq!(format_time(Some(MAX_TIME_SECS)), "2982616-04:13:00");
        assert_eq!(parse_time("2982616-04:13:00"), Ok(Some(257_698_037_580)));
        assert_eq!(
            parse_time("4294967294"),
            Err("invalid time specification '4294967294'".into())
        );
        // Regression (fuzz corpus): accepted, then printed with 13 day digits that
        // did not read back.
        assert_eq!(
            parse_time("999999999999-999999999999"),
            Err("invalid time specification '999999999999-999999999999'".into())
        );
    }

    #[test]
    fn memory_up_to_slurms_largest() {
        assert_eq!(
            parse_mem_mib("9223372036854775807"),
            Ok(9_223_372_036_854_775_807)
        );
        assert_eq!(
            parse_mem_mib("8796093022207T"),
            Ok(9_223_372_036_853_727_232)
        );
        assert_eq!(parse_mem_mib("0000000000000000000004G"), Ok(4096));
        // Regression (fuzz corpus): accepted, but its 16-digit MiB count did not
        // read back.
        assert_eq!(
            parse_mem_mib("999999999999999G"),
            Ok(1_023_999_999_999_998_976)
        );
        assert_eq!(
            parse_mem_mib("1023999999999998976"),
            Ok(1_023_999_999_999_998_976)
        );
        for s in [
            "9223372036854775808",
            "8796093022208T",
            "18446744073709551616",
        ] {
            assert_eq!(
                parse_mem_mib(s),
                Err(format!("invalid memory specification '{s}'")),
                "{s}"
            );
        }
    }

    #[test]
    fn memory_forms() {
        let cases = [
            ("100", 100),
            ("100M", 100),
            ("4G", 4096),
            ("4GB", 4096),
            ("2g", 2048),
            ("3584MB", 3584),
            ("1T", 1048576),
            ("512K", 1),
            ("1025k", 2),
        ];
        for (s, want) in cases {
            assert_eq!(parse_mem_mib(s), Ok(want), "{s}");
        }
        for s in ["", "G", "4X", "-1", "1.5G"] {
            assert!(parse_mem_mib(s).is_err(), "{s}");
        }
    }
}
