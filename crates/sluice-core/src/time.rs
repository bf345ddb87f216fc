//! Time as the core sees it: plain integers, never read from a clock.
//!
//! The core takes `now` as an argument on every call. The live controller passes
//! Unix time; the simulator passes the trace's virtual time. Both are whole seconds.

/// A point in time, in whole seconds since an epoch chosen by the caller
/// (the Unix epoch in the controller, the start of the trace in the simulator).
pub type Time = i64;

/// A length of time in whole seconds.
pub type Secs = i64;

/// A time later than any the core will ever be asked about ("never", "unlimited").
///
/// Kept well below `i64::MAX` so that adding a time limit to it cannot overflow.
pub const NEVER: Time = i64::MAX / 4;

/// The longest time limit the core accepts: 100 years, in seconds. Longer limits (and
/// absurd values from damaged traces) are refused, so that `start + limit` never
/// overflows; Slurm's own limit is `INFINITE` below 2^32 minutes.
pub const MAX_TIME_LIMIT: Secs = 100 * 365 * 86_400;

/// The latest submission or begin time the core accepts (the year 9999 in Unix time).
pub const MAX_TIME: Time = 253_402_300_799;

/// A length of time as Slurm prints limits and elapsed times (its `secs2time_str`):
/// `[D-]HH:MM:SS`; negative lengths (a clock that went back) print as zero. The one
/// implementation: the core's explanations use it, and so does
/// `sluice_conf::duration::format_time`, which the commands print durations with.
pub fn format_duration(secs: Secs) -> String {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, s / 3_600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{sec:02}")
    } else {
        format!("{h:02}:{m:02}:{sec:02}")
    }
}

/// Rounds `t` up to the next multiple of `resolution` seconds (`resolution` ≥ 1).
///
/// Slurm's backfill planner does this to every planned end time (`bf_resolution`),
/// which bounds the number of distinct steps in its availability map.
pub fn round_up(t: Time, resolution: Secs) -> Time {
    debug_assert!(resolution >= 1);
    if resolution <= 1 {
        return t;
    }
    let r = t.rem_euclid(resolution);
    if r == 0 {
        t
    } else {
        t.saturating_add(resolution - r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_up_goes_to_the_next_multiple() {
        assert_eq!(round_up(0, 60), 0);
        assert_eq!(round_up(1, 60), 60);
        assert_eq!(round_up(60, 60), 60);
        assert_eq!(round_up(61, 60), 120);
        assert_eq!(round_up(-1, 60), 0);
        assert_eq!(round_up(17, 1), 17);
    }

    #[test]
    fn durations_print_as_slurm_prints_them() {
        assert_eq!(format_duration(0), "00:00:00");
        assert_eq!(format_duration(59), "00:00:59");
        assert_eq!(format_duration(3_600), "01:00:00");
        assert_eq!(format_duration(86_399), "23:59:59");
        assert_eq!(format_duration(86_400), "1-00:00:00");
        assert_eq!(format_duration(93_784), "1-02:03:04");
        assert_eq!(format_duration(MAX_TIME_LIMIT), "36500-00:00:00");
        assert_eq!(format_duration(-1), "00:00:00");
    }
}
