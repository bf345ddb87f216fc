//! The daemons' logs: the one `tracing` subscriber of the controller (`sluice up`) and of
//! each node agent (`sluice agent`), installed by this binary before it starts them.
//!
//! Lines read like Slurm's: `[2026-12-01T15:25:16.123] sched: Allocate JobId=42 ...`,
//! local time with milliseconds (Slurm's default `LogTimeFormat=iso8601_ms`), errors
//! and warnings marked `error: ` and `warning: `, debugging `debug:  ` and `debug2: `.
//!
//! Slurm has nine levels above `quiet`, `tracing` five; [`filter`] maps one onto the
//! other. The libraries under the daemons (the HTTP server, the runtime) log at their
//! own levels: their warnings and errors are kept, their debugging only from `debug3`
//! on, where Slurm's own log turns into a trace.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::Mutex;

use sluice_conf::log_conf::DebugLevel;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// The `tracing` level Slurm level `level` lets through, for Sluice's own events.
///
/// `quiet` logs nothing; `fatal` and `error` only errors — Sluice says `warning` where
/// Slurm's daemons say `error` (an agent gone, a refused request), so `error` keeps
/// warnings too; `info` (the default) what the daemons decide; `verbose` and `debug`
/// add debugging; `debug2` and louder everything.
pub fn own_level(level: DebugLevel) -> LevelFilter {
    match level {
        DebugLevel::Quiet => LevelFilter::OFF,
        DebugLevel::Fatal => LevelFilter::ERROR,
        DebugLevel::Error => LevelFilter::WARN,
        DebugLevel::Info => LevelFilter::INFO,
        DebugLevel::Verbose | DebugLevel::Debug => LevelFilter::DEBUG,
        DebugLevel::Debug2 | DebugLevel::Debug3 | DebugLevel::Debug4 | DebugLevel::Debug5 => {
            LevelFilter::TRACE
        }
    }
}

/// What a daemon at Slurm level `level` logs: Sluice's crates (targets `sluice*`) at
/// [`own_level`], the libraries at most their warnings below `debug3`.
pub fn filter(level: DebugLevel) -> Targets {
    let own = own_level(level);
    let others = if level >= DebugLevel::Debug3 {
        own
    } else {
        own.min(LevelFilter::WARN)
    };
    Targets::new()
        .with_target("sluice", own)
        .with_default(others)
}

/// Slurm's line layout (see the module's documentation).
struct SlurmLine;

/// The prefix Slurm's log puts before a message of `level`.
fn prefix(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error: ",
        Level::WARN => "warning: ",
        Level::INFO => "",
        Level::DEBUG => "debug:  ",
        Level::TRACE => "debug2: ",
    }
}

/// Now as Slurm's log stamps it: `2026-12-01T15:25:16.123`, local time.
fn stamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}.{:03}",
        sluice_proto::time::timestamp(now.as_secs() as i64),
        now.subsec_millis()
    )
}

impl<S, N> FormatEvent<S, N> for SlurmLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        write!(writer, "[{}] {}", stamp(), prefix(event.metadata().level()))?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The subscriber writing to `out` at Slurm level `level`.
fn subscriber<W>(out: W, level: DebugLevel) -> impl Subscriber + Send + Sync
where
    W: for<'a> tracing_subscriber::fmt::MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .event_format(SlurmLine)
                .with_writer(out),
        )
        .with(filter(level))
}

/// Opens log file `path` for appending, making its directory.
///
/// Errors: the directory or the file cannot be made or opened.
pub fn open(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// Makes this process log to file `path` (appended to, its directory made) at Slurm
/// level `level`, for the rest of its life.
///
/// Errors: the file cannot be opened (or a subscriber is installed already), as a
/// message naming the file.
pub fn install(path: &Path, level: DebugLevel) -> Result<(), String> {
    let file = open(path).map_err(|e| {
        format!(
            "{}: {}",
            path.display(),
            sluice_proto::oserror::describe(&e)
        )
    })?;
    tracing::subscriber::set_global_default(subscriber(Mutex::new(file), level))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Makes this process log to standard error at Slurm level `level` (a daemon in the
/// foreground without a log file, as Slurm's `-D`).
///
/// Errors: a subscriber is installed already.
pub fn install_stderr(level: DebugLevel) -> Result<(), String> {
    tracing::subscriber::set_global_default(subscriber(std::io::stderr, level))
        .map_err(|e| format!("standard error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer into memory, shared with the test.
    #[derive(Clone, Default)]
    struct Memory(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Memory {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Memory {
        type Writer = Memory;
        fn make_writer(&'a self) -> Memory {
            self.clone()
        }
    }

    /// The lines logged at `level` by `log`, timestamps checked and cut off.
    fn logged(level: DebugLevel, log: impl FnOnce()) -> Vec<String> {
        let out = Memory::default();
        tracing::subscriber::with_default(subscriber(out.clone(), level), log);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| {
                // `[2026-12-01T15:25:16.123] `
                let b = l.as_bytes();
                assert!(
                    l.len() > 26 && b[0] == b'[' && b[24] == b']' && b[25] == b' ',
                    "{l}"
                );
                for (i, c) in l[1..24].char_indices() {
                    let want_digit = !matches!(i, 4 | 7 | 10 | 13 | 16 | 19);
                    assert_eq!(c.is_ascii_digit(), want_digit, "{l}");
                }
                assert_eq!(&l[11..12], "T", "{l}");
                assert_eq!(&l[20..21], ".", "{l}");
                l[26..].to_string()
            })
            .collect()
    }

    fn every_level() {
        tracing::error!(target: "sluice_ctld::state", "e");
        tracing::warn!(target: "sluice_ctld::state", "w");
        tracing::info!(target: "sluice_ctld::state", "sched: Allocate JobId=42");
        tracing::debug!(target: "sluice_noded::run", "d");
        tracing::trace!(target: "sluice_noded::run", "t");
        tracing::warn!(target: "hyper::proto", "library warning");
        tracing::debug!(target: "hyper::proto", "library debug");
    }

    #[test]
    fn lines_read_like_slurms() {
        assert_eq!(
            logged(DebugLevel::Info, every_level),
            [
                "error: e",
                "warning: w",
                "sched: Allocate JobId=42",
                "warning: library warning"
            ]
        );
        // Fields besides the message follow it.
        assert_eq!(
            logged(
                DebugLevel::Info,
                || tracing::info!(target: "sluice", job = 7, "ended")
            ),
            ["ended job=7"]
        );
    }

    #[test]
    fn slurm_levels_choose_what_is_logged() {
        assert!(logged(DebugLevel::Quiet, every_level).is_empty());
        assert_eq!(logged(DebugLevel::Fatal, every_level), ["error: e"]);
        assert_eq!(
            logged(DebugLevel::Error, every_level),
            ["error: e", "warning: w", "warning: library warning"]
        );
        let debug = [
            "error: e",
            "warning: w",
            "sched: Allocate JobId=42",
            "debug:  d",
            "warning: library warning",
        ];
        assert_eq!(logged(DebugLevel::Verbose, every_level), debug);
        assert_eq!(logged(DebugLevel::Debug, every_level), debug);
        let mut trace = debug.to_vec();
        trace.insert(4, "debug2: t");
        assert_eq!(logged(DebugLevel::Debug2, every_level), trace);
        // From debug3 on, the libraries' debugging too.
        let mut all = trace.clone();
        all.push("debug:  library debug");
        assert_eq!(logged(DebugLevel::Debug3, every_level), all);
        assert_eq!(logged(DebugLevel::Debug5, every_level), all);
    }

    #[test]
    fn every_slurm_level_has_a_filter_no_quieter_than_the_one_below() {
        let filters: Vec<LevelFilter> = DebugLevel::ALL.iter().map(|l| own_level(*l)).collect();
        assert!(filters.windows(2).all(|w| w[0] <= w[1]), "{filters:?}");
        assert_eq!(own_level(DebugLevel::default()), LevelFilter::INFO);
    }

    #[test]
    fn a_log_file_is_appended_to_in_a_directory_made_for_it() {
        let dir = std::env::temp_dir().join(format!("sluice-log-{}", std::process::id()));
        let path = dir.join("a/b/slurmctld.log");
        io::Write::write_all(&mut open(&path).unwrap(), b"one\n").unwrap();
        io::Write::write_all(&mut open(&path).unwrap(), b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
