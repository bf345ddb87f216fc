//! Points in time as Slurm prints and reads them, shared by the commands, the
//! controller and the node agents: the one place timestamps are formatted and parsed.
//! Durations are `sluice_conf::duration`'s.

/// Unix time `t` (seconds) broken down in the local time zone.
pub fn local(t: i64) -> libc::tm {
    // SAFETY: localtime_r writes into the struct we own and reads `t`; tm is plain data.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let tt: libc::time_t = t as libc::time_t;
        libc::localtime_r(&tt, &mut tm);
        tm
    }
}

/// Unix time `t` (seconds) as Slurm prints times: `2026-11-29T20:04:18`, local time.
pub fn timestamp(t: i64) -> String {
    let tm = local(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// How the commands print times for people: Slurm's `SLURM_TIME_FORMAT`, read once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeFormat {
    /// `2026-11-29T20:04:18` (unset, empty, or `standard`).
    Standard,
    /// `relative`: relative to today, as short as it can be (`20:04:18`, `Ystday 20:04`,
    /// `Tomorr 08:00`, `Mon 20:04`, `29 Nov 20:04`, `29 Nov 2025`).
    Relative,
    /// A `strftime(3)` format with at least one `%` (`%s`: Unix seconds).
    Strftime(std::ffi::CString),
}

impl TimeFormat {
    /// The format `SLURM_TIME_FORMAT`'s value `v` names; `Err` for a value Slurm calls
    /// invalid (no `%`, or 32 bytes or more), which prints as standard.
    pub fn parse(v: Option<&str>) -> Result<TimeFormat, String> {
        match v {
            None | Some("") | Some("standard") => Ok(TimeFormat::Standard),
            Some("relative") => Ok(TimeFormat::Relative),
            Some(f) if f.contains('%') && f.len() < 32 => std::ffi::CString::new(f)
                .map(TimeFormat::Strftime)
                .map_err(|_| f.to_string()),
            Some(f) => Err(f.to_string()),
        }
    }

    /// The format this process prints times in, from its environment (an invalid one
    /// reported on standard error once, as Slurm's commands report it).
    pub fn current() -> &'static TimeFormat {
        static FORMAT: std::sync::OnceLock<TimeFormat> = std::sync::OnceLock::new();
        FORMAT.get_or_init(|| {
            let v = std::env::var("SLURM_TIME_FORMAT").ok();
            TimeFormat::parse(v.as_deref()).unwrap_or_else(|f| {
                let me = std::env::args().next().unwrap_or_default();
                let me = me.rsplit('/').next().unwrap_or_default().to_string();
                eprintln!("{me}: error: invalid SLURM_TIME_FORMAT = '{f}'");
                TimeFormat::Standard
            })
        })
    }

    /// Unix time `t` in this format, local time, `now` being the day `relative` counts
    /// from; at most 31 characters, as Slurm's buffer holds (`#`s where the result
    /// would not fit at all).
    pub fn format(&self, t: i64, now: i64) -> String {
        let spec = match self {
            TimeFormat::Standard => return timestamp(t),
            TimeFormat::Relative => {
                std::ffi::CString::new(relative_format(t, now)).expect("no NUL in a fixed format")
            }
            TimeFormat::Strftime(f) => f.clone(),
        };
        let tm = local(t);
        let mut buf = [0u8; 256];
        // SAFETY: strftime writes at most `buf.len()` bytes into `buf`, reading the
        // NUL-terminated format and the broken-down time we own.
        let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), spec.as_ptr(), &tm) };
        if n == 0 {
            return "#".repeat(31);
        }
        let text = String::from_utf8_lossy(&buf[..n]);
        text.chars().take(31).collect()
    }
}

/// Slurm's relative layout for `t` seen on the day of `now` (`_relative_date_fmt`).
fn relative_format(t: i64, now: i64) -> &'static str {
    let day = |tm: libc::tm| 1000 * (tm.tm_year + 1900) + tm.tm_yday;
    match day(local(t)) - day(local(now)) {
        -1 => "Ystday %H:%M",
        0 => "%H:%M:%S",
        1 => "Tomorr %H:%M",
        d if !(-365..=365).contains(&d) => "%-d %b %Y",
        d if !(-1..=6).contains(&d) => "%-d %b %H:%M",
        _ => "%a %H:%M",
    }
}

/// Unix time `t` as Slurm's commands print a time for people
/// (`slurm_make_time_str`): [`timestamp`]'s layout unless `SLURM_TIME_FORMAT` says
/// otherwise (see [`TimeFormat`]); time 0 is `Unknown`.
pub fn shown(t: i64) -> String {
    // As Slurm's: no time at all is `Unknown`, whatever the format.
    if t == 0 {
        return "Unknown".into();
    }
    let f = TimeFormat::current();
    if *f == TimeFormat::Standard {
        return timestamp(t);
    }
    // SAFETY: time(NULL) reads the clock only.
    let now = unsafe { libc::time(std::ptr::null_mut()) } as i64;
    f.format(t, now)
}

/// The date line of `squeue -l` and `sinfo -l` (C's `ctime` without its newline):
/// `Sun Nov 29 20:04:55 2026`, local time.
pub fn date_line(t: i64) -> String {
    ctime_with(t, false)
}

/// Slurm's `slurm_ctime2` (`sdiag`'s times): [`date_line`] with the day of the month
/// zero-padded, `Tue Dec 01 21:47:34 2026`, local time.
pub fn ctime2(t: i64) -> String {
    ctime_with(t, true)
}

fn ctime_with(t: i64, zero_padded: bool) -> String {
    let tm = local(t);
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let day = if zero_padded {
        format!("{:02}", tm.tm_mday)
    } else {
        format!("{:2}", tm.tm_mday)
    };
    format!(
        "{} {} {day} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.rem_euclid(7) as usize],
        MONTHS[tm.tm_mon.rem_euclid(12) as usize],
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

/// Parses a point in time as Slurm's commands take one (`--begin`, sacct's `-S`/`-E`,
/// scontrol's `StartTime=`, `sluice audit --since`): `now[+|-N[seconds|minutes|hours|
/// days|weeks]]`, `HH:MM[:SS]` (the next such time), `YYYY-MM-DD[THH:MM[:SS]]` (what
/// [`timestamp`] prints reads back), `today`, `tomorrow`, `midnight`, `noon`; Unix
/// seconds, local time, relative to `now`. `None` for anything else, impossible dates
/// and times included.
pub fn parse_timestamp(s: &str, now: i64) -> Option<i64> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix("now") {
        if rest.is_empty() {
            return Some(now);
        }
        let (sign, rest) = match rest.strip_prefix('-') {
            Some(r) => (-1, r),
            None => (1, rest.strip_prefix('+')?),
        };
        let split = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: i64 = rest[..split].parse().ok()?;
        let unit = match &rest[split..] {
            "" | "s" | "seconds" | "second" => 1,
            "m" | "min" | "minutes" | "minute" => 60,
            "h" | "hours" | "hour" => 3600,
            "d" | "days" | "day" => 86400,
            "w" | "weeks" | "week" => 604800,
            _ => return None,
        };
        return Some(now + sign * n * unit);
    }
    let tm = local(now);
    let midnight = now - (tm.tm_hour as i64 * 3600 + tm.tm_min as i64 * 60 + tm.tm_sec as i64);
    match s {
        "today" | "midnight" => {
            return Some(if s == "midnight" {
                midnight + 86400
            } else {
                midnight
            })
        }
        "tomorrow" => return Some(midnight + 86400),
        "noon" => {
            return Some(if now < midnight + 43200 {
                midnight + 43200
            } else {
                midnight + 86400 + 43200
            })
        }
        _ => {}
    }
    let hms = |t: &str| -> Option<i64> {
        let p: Vec<&str> = t.split(':').collect();
        let v: Option<Vec<i64>> = p.iter().map(|x| x.parse().ok()).collect();
        let v = v?;
        // As Slurm's parse_time: hours below 24, minutes and seconds below 60.
        let (h, m, sec) = match v.as_slice() {
            [h, m] => (*h, *m, 0),
            [h, m, sec] => (*h, *m, *sec),
            _ => return None,
        };
        ((0..24).contains(&h) && (0..60).contains(&m) && (0..60).contains(&sec))
            .then_some(h * 3600 + m * 60 + sec)
    };
    if !s.contains('-') {
        let t = midnight + hms(s)?;
        return Some(if t <= now { t + 86400 } else { t });
    }
    let (date, time) = s.split_once('T').unwrap_or((s, "00:00"));
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [y, mo, day] = d.as_slice() else {
        return None;
    };
    if !(1..=12).contains(mo) || !(1..=31).contains(day) || !(1970..=9999).contains(y) {
        return None;
    }
    // SAFETY: mktime reads and normalises the struct we own.
    let t = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tm.tm_year = (*y - 1900) as i32;
        tm.tm_mon = (*mo - 1) as i32;
        tm.tm_mday = *day as i32;
        tm.tm_isdst = -1;
        libc::mktime(&mut tm) as i64
    };
    Some(t + hms(time)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_time_format_is_read_as_slurm_reads_it() {
        assert_eq!(TimeFormat::parse(None), Ok(TimeFormat::Standard));
        assert_eq!(TimeFormat::parse(Some("")), Ok(TimeFormat::Standard));
        assert_eq!(
            TimeFormat::parse(Some("standard")),
            Ok(TimeFormat::Standard)
        );
        assert_eq!(
            TimeFormat::parse(Some("relative")),
            Ok(TimeFormat::Relative)
        );
        assert_eq!(TimeFormat::parse(Some("epoch")), Err("epoch".into()));
        assert_eq!(
            TimeFormat::parse(Some(&"%s".repeat(16))),
            Err("%s".repeat(16))
        );
        let t = 1_764_972_000; // a Friday
        let f = |v: &str| TimeFormat::parse(Some(v)).unwrap();
        assert_eq!(f("%s").format(t, t), "1764972000");
        assert_eq!(f("standard").format(t, t), timestamp(t));
        // Longer than Slurm's buffer: cut to its 31 characters.
        assert_eq!(f("%s%s%s%s").format(t, t), "1764972000".repeat(4)[..31]);
    }

    #[test]
    fn relative_times_are_as_short_as_their_distance_from_today_allows() {
        let day = 86_400;
        // Noon, so that a day either side stays on its own date in any time zone
        // within twelve hours of UTC.
        let now = 1_764_936_000 + day / 2 - 1_764_936_000 % day;
        let r = |t: i64| TimeFormat::Relative.format(t, now);
        let hms = |t: i64| {
            let tm = local(t);
            (tm.tm_hour, tm.tm_min, tm.tm_sec)
        };
        let (h, m, s) = hms(now + 60);
        assert_eq!(r(now + 60), format!("{h:02}:{m:02}:{s:02}"));
        assert!(r(now - day).starts_with("Ystday "), "{}", r(now - day));
        assert!(r(now + day).starts_with("Tomorr "), "{}", r(now + day));
        assert_eq!(
            r(now + 3 * day).len(),
            "Mon 12:00".len(),
            "{}",
            r(now + 3 * day)
        );
        assert!(
            r(now - 40 * day).split(' ').count() == 3,
            "{}",
            r(now - 40 * day)
        );
        assert!(r(now - 400 * day).ends_with(&(local(now - 400 * day).tm_year + 1900).to_string()));
    }

    /// 2027-01-16 and 2027-07-16, noon UTC: far from any daylight-saving change.
    const WINTER: i64 = 1_800_100_800;
    const SUMMER: i64 = 1_815_739_200;

    #[test]
    fn timestamps_read_back() {
        for t in [WINTER, SUMMER, WINTER + 1, SUMMER + 86_399, 400 * 86_400] {
            let printed = timestamp(t);
            assert_eq!(printed.len(), 19, "{printed}");
            assert_eq!(parse_timestamp(&printed, t), Some(t), "{printed}");
            // Without seconds or time of day: the start of that minute, that day.
            let minute = &printed[..16];
            assert_eq!(
                parse_timestamp(minute, t),
                Some(t - t.rem_euclid(60)),
                "{minute}"
            );
            let tm = local(t);
            let midnight =
                t - (tm.tm_hour as i64 * 3600 + tm.tm_min as i64 * 60 + tm.tm_sec as i64);
            assert_eq!(parse_timestamp(&printed[..10], t), Some(midnight));
            assert_eq!(parse_timestamp("today", t), Some(midnight));
            assert_eq!(parse_timestamp("tomorrow", t), Some(midnight + 86_400));
        }
    }

    #[test]
    fn times_relative_to_now() {
        let now = WINTER;
        assert_eq!(parse_timestamp("now", now), Some(now));
        assert_eq!(parse_timestamp(" now ", now), Some(now));
        assert_eq!(parse_timestamp("now+1hour", now), Some(now + 3600));
        assert_eq!(parse_timestamp("now+90", now), Some(now + 90));
        assert_eq!(parse_timestamp("now-2days", now), Some(now - 2 * 86_400));
        assert_eq!(parse_timestamp("now+1week", now), Some(now + 604_800));
        assert_eq!(parse_timestamp("now+5m", now), Some(now + 300));
        for bad in ["now+", "now*5", "now+5parsecs", "now+-5"] {
            assert_eq!(parse_timestamp(bad, now), None, "{bad}");
        }
        // A time of day is the next one: later today, or tomorrow once past.
        let tm = local(now);
        let later = format!("{:02}:{:02}", (tm.tm_hour + 1) % 24, tm.tm_min);
        let t = parse_timestamp(&later, now).unwrap();
        assert!(t > now && t <= now + 86_400, "{later}");
        let t = parse_timestamp(&timestamp(now)[11..], now).unwrap();
        assert_eq!(t, now + 86_400, "the same time of day is tomorrow's");
    }

    #[test]
    fn impossible_dates_and_times_are_refused_as_slurm_refuses_them() {
        let now = 1_800_000_000;
        for bad in [
            "2026-13-45",
            "2026-11-30T25:00:00",
            "2026-11-30T10:61",
            "24:00",
            "2026-00-10",
            "1969-12-31",
            "2026-11-30T10",
            "yesterday",
            "",
        ] {
            assert_eq!(parse_timestamp(bad, now), None, "{bad}");
        }
        assert!(parse_timestamp("2026-12-31T23:59:59", now).is_some());
    }

    #[test]
    fn date_lines_as_ctime_prints_them() {
        for t in [WINTER, SUMMER] {
            let line = date_line(t);
            let tm = local(t);
            let stamp = timestamp(t);
            assert_eq!(line.len(), 24, "{line}");
            assert!(
                ["Sun ", "Mon ", "Tue ", "Wed ", "Thu ", "Fri ", "Sat "].contains(&&line[..4]),
                "{line}"
            );
            assert_eq!(&line[4..8], if t == WINTER { "Jan " } else { "Jul " });
            assert_eq!(line[8..10].trim_start(), tm.tm_mday.to_string(), "{line}");
            assert_eq!(&line[11..19], &stamp[11..19]);
            assert_eq!(&line[19..], " 2027");
        }
    }

    #[test]
    fn slurm_ctime2_pads_the_day_with_a_zero() {
        for t in [WINTER, SUMMER] {
            let (line, padded) = (date_line(t), ctime2(t));
            let day = local(t).tm_mday;
            assert_eq!(&padded[8..10], format!("{day:02}"), "{padded}");
            assert_eq!(padded[..8], line[..8]);
            assert_eq!(padded[10..], line[10..]);
        }
    }
}
