//! Slurm's time and memory syntax.

/// The longest finite time limit, in seconds: `0xfffffffd` minutes (about 8166 years).
/// Slurm keeps time limits as 32-bit minutes, the two values above this one meaning
/// `NO_VAL` and `INFINITE`. Bounding limits here also keeps every accepted limit
/// printable by [`format_time`] in a form [`parse_time`] reads back.
pub const MAX_TIME_SECS: i64 = 0xffff_fffd * 60;

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
    let bad = || format!("invalid time specification '{s}'");
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite") || t == "-1" {
        return Ok(None);
    }
    let num = |x: &str| -> Result<i64, String> {
        if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) || x.len() > 12 {
            return Err(bad());
        }
        x.parse::<i64>().map_err(|_| bad())
    };
    let secs = if let Some((d, rest)) = t.split_once('-') {
        let days = num(d)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (h, m, sec) = match parts.as_slice() {
            [h] => (num(h)?, 0, 0),
            [h, m] => (num(h)?, num(m)?, 0),
            [h, m, s] => (num(h)?, num(m)?, num(s)?),
            _ => return Err(bad()),
        };
        days * 86400 + h * 3600 + m * 60 + sec
    } else {
        let parts: Vec<&str> = t.split(':').collect();
        match parts.as_slice() {
            [m] => num(m)? * 60,
            [m, s] => num(m)? * 60 + num(s)?,
            [h, m, s] => num(h)? * 3600 + num(m)? * 60 + num(s)?,
            _ => return Err(bad()),
        }
    };
    if secs > MAX_TIME_SECS {
        return Err(bad());
    }
    Ok(if secs == 0 { None } else { Some(secs) })
}

/// Formats seconds as Slurm prints a time limit: `[D-]HH:MM:SS`, or `UNLIMITED`.
pub fn format_time(secs: Option<i64>) -> String {
    match secs {
        None => "UNLIMITED".to_string(),
        Some(s) => {
            let (d, r) = (s / 86400, s % 86400);
            let (h, m, sec) = (r / 3600, r % 3600 / 60, r % 60);
            if d > 0 {
                format!("{d}-{h:02}:{m:02}:{sec:02}")
            } else {
                format!("{h:02}:{m:02}:{sec:02}")
            }
        }
    }
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
