//! What the Slurm commands share: finding the controller, Slurm's message shapes, and
//! time formats.

use std::path::PathBuf;

use sluice_conf::getopt::GetoptError;
use sluice_proto::{Client, ClientError};

/// Exit status of Slurm's clients for option and value errors.
pub const USAGE_EXIT: i32 = 255;

/// The environment variable naming a controller's TCP address (`host:port`, as given
/// to `sluice up --listen`); without it the commands use the Unix socket.
pub const CONTROLLER_ENV: &str = "SLUICE_CONTROLLER";
/// The environment variable naming the cluster key file for TCP (default:
/// `cluster.key` in the state directory).
pub const KEY_FILE_ENV: &str = "SLUICE_KEY_FILE";

/// A client for the controller of the cluster this shell belongs to: over TCP with
/// signed requests when `SLUICE_CONTROLLER` is set, else on the state directory's
/// Unix socket. Exits with Slurm's connect-failure message when the key for TCP cannot
/// be read.
pub fn controller() -> Client {
    let state = sluice_proto::paths::state_dir();
    match std::env::var(CONTROLLER_ENV).ok().filter(|v| !v.is_empty()) {
        None => Client::new(sluice_proto::paths::controller_socket(&state)),
        Some(addr) => {
            let key_file = std::env::var_os(KEY_FILE_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| state.join("cluster.key"));
            match sluice_proto::auth::read_key(&key_file) {
                Ok(key) => Client::tcp(&addr, key),
                Err(e) => {
                    let me = std::env::args()
                        .next()
                        .and_then(|a| {
                            PathBuf::from(a)
                                .file_name()
                                .map(|f| f.to_string_lossy().into_owned())
                        })
                        .unwrap_or_else(|| "sluice".into());
                    fail(
                        &me,
                        format!(
                            "Unable to contact slurm controller (cannot read the cluster key {}: {e})",
                            key_file.display()
                        ),
                        1,
                    )
                }
            }
        }
    }
}

/// Prints `cmd: error: message` and exits with `code`.
pub fn fail(cmd: &str, message: impl std::fmt::Display, code: i32) -> ! {
    eprintln!("{cmd}: error: {message}");
    std::process::exit(code)
}

/// The message for a request that did not reach or satisfy the controller.
pub fn describe(e: &ClientError) -> String {
    match e {
        ClientError::Connect { .. } => {
            "Unable to contact slurm controller (connect failure)".to_string()
        }
        other => other.to_string(),
    }
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

use sluice_proto::time::local;
pub use sluice_proto::time::timestamp;

/// The date line of `squeue -l` and `sinfo -l`: `Sun Nov 29 20:04:55 2026`.
pub fn date_line(t: i64) -> String {
    let tm = local(t);
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.rem_euclid(7) as usize],
        MONTHS[tm.tm_mon.rem_euclid(12) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

/// A duration as squeue prints run times and limits: `0:35`, `1:02:03`, `1-02:03:04`.
pub fn squeue_time(secs: i64) -> String {
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

/// A duration as sacct and scontrol print it: `00:00:35`, `1-02:03:04`.
pub fn elapsed(secs: i64) -> String {
    sluice_conf::duration::format_time(Some(secs.max(0)))
}

/// A time limit: `UNLIMITED` or as [`squeue_time`] (squeue) / [`elapsed`] (scontrol).
pub fn limit(secs: Option<i64>, long: bool) -> String {
    match secs {
        None => "UNLIMITED".into(),
        Some(s) if long => elapsed(s),
        Some(s) => squeue_time(s),
    }
}

/// This host's short name.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.split('.').next().unwrap_or("").to_string())
        .unwrap_or_else(|| "localhost".into())
}

/// The current directory as an absolute path.
pub fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

/// Parses `--begin` (and sacct's `-S`/`-E`): `now[+|-N[seconds|minutes|hours|days]]`,
/// `HH:MM[:SS]`, `YYYY-MM-DD[THH:MM[:SS]]`, `today`, `tomorrow`, `midnight`, `noon`;
/// Unix seconds.
pub fn parse_begin(s: &str, now: i64) -> Option<i64> {
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

/// A `SLURM_*` style job id argument: `123`, `123_4`, `123_[1-3]`, `123.batch` (step
/// part ignored). Returns (job, task list or none).
pub fn parse_job_arg(s: &str) -> Option<Vec<(u64, Option<u32>)>> {
    let s = s.split('.').next()?;
    match s.split_once('_') {
        None => Some(vec![(s.parse().ok()?, None)]),
        Some((j, t)) => {
            let job: u64 = j.parse().ok()?;
            let t = t.trim_start_matches('[').trim_end_matches(']');
            let spec = sluice_conf::array::parse_array(t.split('%').next()?).ok()?;
            Some(spec.indices.into_iter().map(|i| (job, Some(i))).collect())
        }
    }
}

/// An option error as the query commands (squeue, sinfo, scancel, sacct, sprio,
/// sshare) print it after `CMD: error: `: an unknown option quoted as typed (a short
/// one from its letter on), a missing value named by the option as typed (`'-u'`,
/// `'--user'`), glibc's words for the rest.
pub fn option_message(e: &GetoptError) -> String {
    match e {
        GetoptError::UnrecognizedLong { word, .. } => format!("unrecognized option '{word}'"),
        GetoptError::InvalidShort { rest, .. } => format!("unrecognized option '-{rest}'"),
        GetoptError::LongRequiresArgument { long, .. } => {
            format!("option '--{long}' requires an argument")
        }
        GetoptError::ShortRequiresArgument { letter, .. } => {
            format!("option '-{letter}' requires an argument")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use sluice_conf::getopt::{Getopt, Opt, Order};

    use super::option_message;

    #[test]
    fn query_commands_word_option_errors_as_they_always_have() {
        const TABLE: &[Opt] = &[
            Opt::flag("noheader", Some('n')),
            Opt::required("user", Some('u')),
        ];
        let first_error = |args: &[&str]| {
            Getopt::new(TABLE, args.iter().map(|a| a.to_string()), Order::Permute)
                .find_map(Result::err)
                .map(|e| option_message(&e))
                .unwrap()
        };
        assert_eq!(
            first_error(&["--bogus=1"]),
            "unrecognized option '--bogus=1'"
        );
        assert_eq!(first_error(&["-zq"]), "unrecognized option '-zq'");
        assert_eq!(first_error(&["-nzq"]), "unrecognized option '-zq'");
        assert_eq!(first_error(&["-u"]), "option '-u' requires an argument");
        assert_eq!(
            first_error(&["--us"]),
            "option '--user' requires an argument"
        );
        assert_eq!(
            first_error(&["--noheader=yes"]),
            "option '--noheader' doesn't allow an argument"
        );
    }

    #[test]
    fn impossible_dates_and_times_are_refused_as_slurm_refuses_them() {
        use super::parse_begin;
        let now = 1_800_000_000;
        for bad in [
            "2026-13-45",
            "2026-11-30T25:00:00",
            "2026-11-30T10:61",
            "24:00",
            "2026-00-10",
        ] {
            assert_eq!(parse_begin(bad, now), None, "{bad}");
        }
        assert!(parse_begin("2026-12-31T23:59:59", now).is_some());
        assert_eq!(parse_begin("now+1hour", now), Some(now + 3600));
    }
}
