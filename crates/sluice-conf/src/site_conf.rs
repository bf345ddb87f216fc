//! `sluice.conf` (Sluice's own file, next to slurm.conf): settings of features Slurm
//! has no place for. Read the way [`crate::slurm_conf`] reads slurm.conf (`#` comments,
//! `\` continuations, `Include FILE`, case-insensitive keys, `Key=Value` words):
//!
//! ```text
//! # Keep the audit trail (sluice audit) for a year.
//! PurgeAuditAfter=12months
//! ```
//!
//! - `PurgeAuditAfter=`: how long audit events are kept, in slurmdbd's `Purge*After`
//!   syntax — a number of months, or of hours or days with that unit after it
//!   (`12months`, `12month`, `12m`, `90days`, `24hours`; any prefix of `months`,
//!   `days`, `hours`, in any case) — or `UNLIMITED` (`INFINITE`) to keep them forever.
//!   Default 90 days. Unlike slurmdbd, which purges at calendar month boundaries, a
//!   month here is 30 days.
//! - `ForecastPasses=`: how many scheduling passes the controller's forecast of the
//!   whole queue may simulate (what `squeue --start` and `sluice explain` show; see the
//!   README). Default 100; more passes give exact starts deeper in a long queue, at
//!   the cost of more of one core in the background after each change. `0` turns the
//!   forecast off (`squeue --start` then shows the backfill plan, as Slurm's).
//!
//! - `IdleGpuThreshold=`: a running job's GPU whose utilisation stays under this many
//!   percent is idle (default 5).
//! - `IdleGpuTime=`: for how long, in Slurm's time-limit syntax (`30` minutes,
//!   `1:00:00`, `1-0`), before the job is flagged: a line in the controller's log, an
//!   audit event, a metric, a line in `scontrol show job` and `sluice explain`
//!   (default 30 minutes; `0` turns the check off).
//! - `IdleGpuCommand=`: a program the controller runs (as its own user, without a
//!   shell) when it flags a job, with the job's details in its environment
//!   (`SLUICE_JOB_ID`, `SLUICE_JOB_USER`, `SLUICE_JOB_ACCOUNT`, `SLUICE_JOB_NODES`,
//!   `SLUICE_GPUS_HELD`, `SLUICE_GPUS_IDLE`, `SLUICE_IDLE_SINCE`); default none.
//! - `IdleGpuAction=`: `notify` (default: flag only) or `cancel` (the controller then
//!   also cancels the flagged job, as `scancel` would).
//!
//! - `ServiceTcpPorts=`: a port range (`8000-8099`, or one port) on which the
//!   controller also forwards plain TCP to services (see the README's "A stable
//!   address for services"): a service declaring a port in the range is reached at
//!   that port on the controller's host. Default none.
//! - `StorageType=`, `StorageHost=`, `StoragePort=`, `StorageUser=`, `StorageLoc=`,
//!   `StoragePassFile=`, `StorageUrl=`: where the controller keeps its state, SQLite
//!   (the default) or PostgreSQL ([`crate::storage_conf`]).
//!
//! Without the file every setting has its default. Unknown keys are errors (the file is
//! Sluice's alone, so a misspelt key is never another program's).

use std::path::Path;

use crate::reader::ConfReader;
use crate::slurm_conf::ConfError;
use crate::storage_conf::StorageConf;

/// Seconds in a day.
const DAY: i64 = 86_400;

/// `PurgeAuditAfter`'s default: 90 days, in seconds.
pub const DEFAULT_PURGE_AUDIT_AFTER: i64 = 90 * DAY;

/// `ForecastPasses`' default.
pub const DEFAULT_FORECAST_PASSES: u32 = 100;

/// The settings of a sluice.conf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteConf {
    /// `PurgeAuditAfter`: audit events older than this many seconds are purged; `None`:
    /// kept forever.
    pub purge_audit_after: Option<i64>,
    /// `ForecastPasses`: the most passes the controller's forecast simulates; 0: no
    /// forecast.
    pub forecast_passes: u32,
    /// `IdleGpu*`: when a running job's GPUs count as idle, and what then happens.
    pub idle_gpu: IdleGpuConf,
    /// `ServiceTcpPorts`: the ports (first, last) the controller forwards plain TCP on
    /// to the services declaring them; `None`: none.
    pub service_tcp_ports: Option<(u16, u16)>,
    /// `Storage*`: where the controller keeps its state ([`crate::storage_conf`]).
    pub storage: StorageConf,
}

/// The idle-GPU check's settings (`IdleGpuThreshold`, `IdleGpuTime`, `IdleGpuCommand`,
/// `IdleGpuAction`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleGpuConf {
    /// Under this utilisation, percent, a GPU is idle.
    pub threshold: u32,
    /// For this long, seconds, before its job is flagged; 0: never.
    pub after: i64,
    /// Run when a job is flagged.
    pub command: Option<String>,
    /// Cancel a flagged job (`IdleGpuAction=cancel`).
    pub cancel: bool,
}

impl Default for IdleGpuConf {
    fn default() -> Self {
        IdleGpuConf {
            threshold: 5,
            after: 30 * 60,
            command: None,
            cancel: false,
        }
    }
}

impl Default for SiteConf {
    fn default() -> Self {
        SiteConf {
            purge_audit_after: Some(DEFAULT_PURGE_AUDIT_AFTER),
            forecast_passes: DEFAULT_FORECAST_PASSES,
            idle_gpu: IdleGpuConf::default(),
            service_tcp_ports: None,
            storage: StorageConf::default(),
        }
    }
}

/// Reads and parses a sluice.conf file (and the files it includes).
///
/// Errors: a file that cannot be read, and what [`parse_str`] refuses.
pub fn read(path: &Path) -> Result<SiteConf, ConfError> {
    let mut p = Parser::default();
    p.read_file(path, 0)?;
    Ok(p.out)
}

/// Parses sluice.conf text; `path` is used for messages and relative `Include`s.
///
/// Errors, each with file and line: an unknown key, a `PurgeAuditAfter` value that
/// [`parse_purge_after`] refuses, and a `ForecastPasses` that is not a whole number.
pub fn parse_str(text: &str, path: &Path) -> Result<SiteConf, ConfError> {
    let mut p = Parser::default();
    p.parse_text(text, path, 0)?;
    Ok(p.out)
}

/// A duration in slurmdbd's `Purge*After` syntax, in seconds (see the module
/// documentation); `None` for `UNLIMITED`, and for 0, which slurmdbd also reads as
/// "never purge" (rather than "purge everything").
///
/// Errors: no number, or a unit that is not a prefix of `months`, `days` or `hours`
/// (slurmdbd's message).
pub fn parse_purge_after(value: &str) -> Result<Option<i64>, String> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("UNLIMITED") || v.eq_ignore_ascii_case("INFINITE") {
        return Ok(None);
    }
    let digits = v.len() - v.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let Ok(n) = v[..digits].parse::<i64>() else {
        return Err(format!("Invalid purge value '{v}'"));
    };
    let unit = v[digits..].to_ascii_lowercase();
    let is = |word: &str| word.starts_with(unit.as_str());
    let secs = if unit.is_empty() || is("months") {
        30 * DAY
    } else if is("days") {
        DAY
    } else if is("hours") {
        3_600
    } else {
        return Err(format!(
            "Invalid purge unit '{}', valid options are hours, days, or months",
            &v[digits..]
        ));
    };
    if n == 0 {
        return Ok(None);
    }
    n.checked_mul(secs)
        .map(Some)
        .ok_or_else(|| format!("Invalid purge value '{v}'"))
}

/// `FIRST-LAST` or one port, unprivileged, first not after last.
fn parse_port_range(v: &str) -> Option<(u16, u16)> {
    let v = v.trim();
    let (a, b) = v.split_once('-').unwrap_or((v, v));
    let (a, b): (u16, u16) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (1024 <= a && a <= b).then_some((a, b))
}

#[derive(Default)]
struct Parser {
    out: SiteConf,
}

impl ConfReader for Parser {
    fn pairs_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        let err = |message: String| ConfError {
            path: path.to_path_buf(),
            line,
            message,
        };
        for (k, v) in kv {
            if k.eq_ignore_ascii_case("PurgeAuditAfter") {
                self.out.purge_audit_after =
                    parse_purge_after(&v).map_err(|m| err(format!("PurgeAuditAfter: {m}")))?;
            } else if k.eq_ignore_ascii_case("ForecastPasses") {
                self.out.forecast_passes = v.trim().parse().map_err(|_| {
                    err(format!(
                        "ForecastPasses: '{v}' is not a whole number of passes"
                    ))
                })?;
            } else if k.eq_ignore_ascii_case("IdleGpuThreshold") {
                self.out.idle_gpu.threshold = v
                    .trim()
                    .trim_end_matches('%')
                    .parse()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| {
                        err(format!(
                            "IdleGpuThreshold: '{v}' is not a percentage from 0 to 100"
                        ))
                    })?;
            } else if k.eq_ignore_ascii_case("IdleGpuTime") {
                // 0 (and UNLIMITED, never long enough) turn the check off.
                self.out.idle_gpu.after = crate::duration::parse_time(&v)
                    .map_err(|_| {
                        err(format!(
                            "IdleGpuTime: '{v}' is not a time (minutes, or [days-]hours:minutes:seconds)"
                        ))
                    })?
                    .unwrap_or(0);
            } else if k.eq_ignore_ascii_case("IdleGpuCommand") {
                let cmd = v.trim();
                if !cmd.starts_with('/') {
                    return Err(err(format!(
                        "IdleGpuCommand: '{v}' is not an absolute path"
                    )));
                }
                self.out.idle_gpu.command = Some(cmd.to_string());
            } else if k.eq_ignore_ascii_case("IdleGpuAction") {
                self.out.idle_gpu.cancel = match v.trim().to_ascii_lowercase().as_str() {
                    "notify" | "none" => false,
                    "cancel" => true,
                    _ => {
                        return Err(err(format!(
                            "IdleGpuAction: '{v}' is neither notify nor cancel"
                        )))
                    }
                };
            } else if k.eq_ignore_ascii_case("ServiceTcpPorts") {
                self.out.service_tcp_ports = Some(parse_port_range(&v).ok_or_else(|| {
                    err(format!(
                        "ServiceTcpPorts: '{v}' is not a port range (FIRST-LAST, from 1024 to 65535)"
                    ))
                })?);
            } else if let Some(taken) = self.out.storage.apply(&k, &v) {
                taken.map_err(err)?;
            } else {
                return Err(err(format!("unknown key '{k}'")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SiteConf, String> {
        parse_str(text, Path::new("/etc/slurm/sluice.conf")).map_err(|e| e.to_string())
    }

    #[test]
    fn service_tcp_ports_are_a_range_of_unprivileged_ports() {
        assert_eq!(SiteConf::default().service_tcp_ports, None);
        let ports = |t: &str| parse(t).map(|c| c.service_tcp_ports);
        assert_eq!(ports("ServiceTcpPorts=8000-8099\n"), Ok(Some((8000, 8099))));
        assert_eq!(ports("ServiceTcpPorts=9000\n"), Ok(Some((9000, 9000))));
        for bad in ["80-90", "8099-8000", "8000-", "x", "8000-70000"] {
            assert_eq!(
                ports(&format!("ServiceTcpPorts={bad}\n")),
                Err(format!("/etc/slurm/sluice.conf:1: ServiceTcpPorts: '{bad}' is not a port range (FIRST-LAST, from 1024 to 65535)")),
            );
        }
    }

    #[test]
    fn purge_after_takes_slurmdbds_units_and_defaults_to_ninety_days() {
        assert_eq!(SiteConf::default().purge_audit_after, Some(90 * 86_400));
        let secs = |v: &str| parse_purge_after(v).unwrap();
        assert_eq!(secs("12month"), Some(12 * 30 * 86_400));
        assert_eq!(secs("12months"), Some(12 * 30 * 86_400));
        assert_eq!(secs("3"), Some(3 * 30 * 86_400), "a bare number is months");
        assert_eq!(secs("90days"), Some(90 * 86_400));
        assert_eq!(secs("90D"), Some(90 * 86_400));
        assert_eq!(secs("24hours"), Some(24 * 3_600));
        assert_eq!(secs("24h"), Some(24 * 3_600));
        assert_eq!(secs("UNLIMITED"), None);
        // 0 keeps everything, as in slurmdbd; it never empties the trail.
        assert_eq!(secs("0"), None);
        assert_eq!(secs("0days"), None);
        assert_eq!(
            parse_purge_after("12weeks"),
            Err("Invalid purge unit 'weeks', valid options are hours, days, or months".into())
        );
        assert_eq!(
            parse_purge_after("days"),
            Err("Invalid purge value 'days'".into())
        );
    }

    #[test]
    fn the_file_sets_the_retention_and_refuses_unknown_keys_with_file_and_line() {
        assert_eq!(
            parse("# audit\nPurgeAuditAfter=30days\n").unwrap(),
            SiteConf {
                purge_audit_after: Some(30 * 86_400),
                forecast_passes: 100,
                idle_gpu: IdleGpuConf::default(),
                service_tcp_ports: None,
                storage: StorageConf::default(),
            }
        );
        assert_eq!(
            parse("ForecastPasses=1000\n").unwrap().forecast_passes,
            1000
        );
        assert_eq!(parse("forecastpasses=0\n").unwrap().forecast_passes, 0);
        assert_eq!(
            parse("ForecastPasses=-3\n").unwrap_err(),
            "/etc/slurm/sluice.conf:1: ForecastPasses: '-3' is not a whole number of passes"
        );
        assert_eq!(
            parse("purgeauditafter=unlimited\n")
                .unwrap()
                .purge_audit_after,
            None
        );
        assert_eq!(
            parse("\nPurgeAuditAfter=1fortnight\n").unwrap_err(),
            "/etc/slurm/sluice.conf:2: PurgeAuditAfter: Invalid purge unit 'fortnight', valid options are hours, days, or months"
        );
        assert_eq!(
            parse("PurgeJobAfter=1\n").unwrap_err(),
            "/etc/slurm/sluice.conf:1: unknown key 'PurgeJobAfter'"
        );
    }

    #[test]
    fn the_idle_gpu_check_takes_a_threshold_a_time_a_command_and_an_action() {
        let d = SiteConf::default().idle_gpu;
        assert_eq!(
            (d.threshold, d.after, d.command, d.cancel),
            (5, 1800, None, false)
        );
        let c = parse(
            "IdleGpuThreshold=10%\nIdleGpuTime=1:30:00\nIdleGpuCommand=/usr/local/sbin/idle-gpu\nIdleGpuAction=cancel\n",
        )
        .unwrap()
        .idle_gpu;
        assert_eq!(c.threshold, 10);
        assert_eq!(c.after, 5400);
        assert_eq!(c.command.as_deref(), Some("/usr/local/sbin/idle-gpu"));
        assert!(c.cancel);
        assert_eq!(parse("IdleGpuTime=45\n").unwrap().idle_gpu.after, 45 * 60);
        assert_eq!(parse("IdleGpuTime=0\n").unwrap().idle_gpu.after, 0, "off");
        for (text, message) in [
            (
                "IdleGpuThreshold=abc",
                "IdleGpuThreshold: 'abc' is not a percentage from 0 to 100",
            ),
            (
                "IdleGpuThreshold=101",
                "IdleGpuThreshold: '101' is not a percentage from 0 to 100",
            ),
            (
                "IdleGpuTime=soon",
                "IdleGpuTime: 'soon' is not a time (minutes, or [days-]hours:minutes:seconds)",
            ),
            (
                "IdleGpuCommand=notify.sh",
                "IdleGpuCommand: 'notify.sh' is not an absolute path",
            ),
            (
                "IdleGpuAction=kill",
                "IdleGpuAction: 'kill' is neither notify nor cancel",
            ),
        ] {
            assert_eq!(
                parse(text).unwrap_err(),
                format!("/etc/slurm/sluice.conf:1: {message}")
            );
        }
    }
}
