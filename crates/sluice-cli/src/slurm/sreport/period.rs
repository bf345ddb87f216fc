//! The period a report covers, as sreport sets it: `start=` and `end=` in Slurm's time
//! forms, each rounded to the nearest hour (Slurm's usage is rolled up by the hour),
//! the end no later than now; without them, yesterday from midnight to midnight.

use sluice_proto::time::{local, parse_timestamp};

/// `[start, end)`, Unix seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// First second.
    pub start: i64,
    /// One past the last second.
    pub end: i64,
}

impl Period {
    /// Seconds covered.
    pub fn secs(&self) -> i64 {
        self.end - self.start
    }
}

/// C's `mktime` of a broken-down local time (fields out of range are carried, as
/// `mktime` does; daylight saving time as the zone says then).
fn mktime(mut tm: libc::tm) -> i64 {
    tm.tm_isdst = -1;
    // SAFETY: mktime reads and normalises the struct we own.
    unsafe { libc::mktime(&mut tm) as i64 }
}

/// Slurm's `slurmdb_report_set_start_end_time`: `start`/`end` given (non-zero) are
/// rounded to the nearest hour; an end not given is today's midnight, a start not given
/// yesterday's; a period under an hour is made one hour from its start.
pub fn report_period(start: i64, end: i64, now: i64) -> Period {
    let round = |t: i64| {
        let mut tm = local(t);
        if tm.tm_sec >= 30 {
            tm.tm_min += 1;
        }
        if tm.tm_min >= 30 {
            tm.tm_hour += 1;
        }
        tm
    };
    let mut end_tm = if end != 0 {
        round(end)
    } else {
        let mut tm = local(now);
        tm.tm_hour = 0;
        tm
    };
    end_tm.tm_sec = 0;
    end_tm.tm_min = 0;
    let mut start_tm = if start != 0 {
        round(start)
    } else {
        let mut tm = local(now);
        tm.tm_hour = 0;
        tm.tm_mday -= 1;
        tm
    };
    start_tm.tm_sec = 0;
    start_tm.tm_min = 0;
    let start = mktime(start_tm);
    let mut end = mktime(end_tm);
    if end - start < 3600 {
        end = start + 3600;
    }
    Period { start, end }
}

/// Parses a time as sreport's `start=`/`end=` take one (Slurm's `parse_time` with
/// `past` set): [`parse_timestamp`]'s forms, except that `HH:MM[:SS]` alone is today's,
/// and `MM/DD[/YY]` (this year, or last year for a later month). `None`: not a time
/// (sreport then says so and takes the default).
pub fn parse_report_time(s: &str, now: i64) -> Option<i64> {
    let s = s.trim();
    let tm = local(now);
    let midnight = now - i64::from(tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec);
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == ':') && s.contains(':') {
        let t = parse_timestamp(s, now)?;
        // parse_timestamp gives the next such time; sreport's is today's.
        return Some(if t >= midnight + 86400 { t - 86400 } else { t });
    }
    if let Some((date, time)) = s
        .split_once('-')
        .filter(|(d, _)| d.contains('/'))
        .or_else(|| s.contains('/').then_some((s, "")))
    {
        let p: Vec<i64> = date
            .split('/')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        let (month, day, year) = match p.as_slice() {
            [m, d] => {
                let y = if m - 1 > i64::from(tm.tm_mon) {
                    i64::from(tm.tm_year) + 1899
                } else {
                    i64::from(tm.tm_year) + 1900
                };
                (*m, *d, y)
            }
            [m, d, y] if *y < 100 => (*m, *d, 2000 + y),
            [m, d, y] => (*m, *d, *y),
            _ => return None,
        };
        let stamp = if time.is_empty() {
            format!("{year:04}-{month:02}-{day:02}")
        } else {
            format!("{year:04}-{month:02}-{day:02}T{time}")
        };
        return parse_timestamp(&stamp, now);
    }
    parse_timestamp(s, now)
}
