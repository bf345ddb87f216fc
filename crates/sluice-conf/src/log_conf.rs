//! Logging settings of slurm.conf: `SlurmctldLogFile`, `SlurmdLogFile`,
//! `SlurmctldDebug` and `SlurmdDebug`.
//!
//! Levels are Slurm's (`slurm.conf(5)`): `quiet`, `fatal`, `error`, `info`, `verbose`,
//! `debug`, `debug2` … `debug5`, or their numbers 0–9 in that order, as Slurm's
//! `log_string2num` takes them; the default is `info`. `SlurmdLogFile` may hold `%h`
//! (the host name) and `%n` (the node name), expanded per agent as slurmd expands them.
//! Where the daemons log when a file is not set, and how a level becomes a filter, is
//! the command's business (`sluice up`), not the configuration's.

use std::fmt;
use std::str::FromStr;

use crate::SlurmConf;

/// A Slurm log level, quietest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DebugLevel {
    /// Nothing at all.
    Quiet,
    /// Only what stops the daemon.
    Fatal,
    /// Errors.
    Error,
    /// Slurm's default: what the daemon decides (starts, ends, node states).
    #[default]
    Info,
    /// A little more than `info`.
    Verbose,
    /// Debugging.
    Debug,
    /// More debugging, up to `debug5`.
    Debug2,
    /// See [`DebugLevel::Debug2`].
    Debug3,
    /// See [`DebugLevel::Debug2`].
    Debug4,
    /// The most Slurm logs.
    Debug5,
}

impl DebugLevel {
    /// Every level, in Slurm's numeric order (the index is the number).
    pub const ALL: [DebugLevel; 10] = [
        DebugLevel::Quiet,
        DebugLevel::Fatal,
        DebugLevel::Error,
        DebugLevel::Info,
        DebugLevel::Verbose,
        DebugLevel::Debug,
        DebugLevel::Debug2,
        DebugLevel::Debug3,
        DebugLevel::Debug4,
        DebugLevel::Debug5,
    ];

    /// A level as slurm.conf writes it: a name (any case) or its number 0–9.
    ///
    /// Errors: anything else, naming the accepted values.
    pub fn parse(value: &str) -> Result<DebugLevel, String> {
        let v = value.trim();
        if let Ok(n) = v.parse::<usize>() {
            return Self::ALL.get(n).copied().ok_or_else(|| invalid(value));
        }
        Self::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(v))
            .ok_or_else(|| invalid(value))
    }

    /// The level's name as Slurm prints it (`scontrol show config`).
    pub fn name(self) -> &'static str {
        match self {
            DebugLevel::Quiet => "quiet",
            DebugLevel::Fatal => "fatal",
            DebugLevel::Error => "error",
            DebugLevel::Info => "info",
            DebugLevel::Verbose => "verbose",
            DebugLevel::Debug => "debug",
            DebugLevel::Debug2 => "debug2",
            DebugLevel::Debug3 => "debug3",
            DebugLevel::Debug4 => "debug4",
            DebugLevel::Debug5 => "debug5",
        }
    }

    /// The level's number (0 for `quiet` … 9 for `debug5`).
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The level `steps` louder, as each `-v` of a Slurm daemon raises it; `debug5` at
    /// most.
    pub fn raised(self, steps: u8) -> DebugLevel {
        let n = (self.number() as usize + steps as usize).min(Self::ALL.len() - 1);
        Self::ALL[n]
    }
}

fn invalid(value: &str) -> String {
    format!(
        "invalid level '{value}' (quiet, fatal, error, info, verbose, debug, debug2, debug3, \
         debug4, debug5, or 0-9)"
    )
}

impl fmt::Display for DebugLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DebugLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DebugLevel::parse(s)
    }
}

/// The daemons' logging settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogConf {
    /// `SlurmctldLogFile`, as written; `None` when not set (or empty).
    pub slurmctld_log_file: Option<String>,
    /// `SlurmdLogFile`, as written (`%h`, `%n` not yet expanded, see
    /// [`LogConf::slurmd_log_file_for`]); `None` when not set (or empty).
    pub slurmd_log_file: Option<String>,
    /// `SlurmctldDebug` (default `info`).
    pub slurmctld_debug: DebugLevel,
    /// `SlurmdDebug` (default `info`).
    pub slurmd_debug: DebugLevel,
}

impl LogConf {
    /// The settings of a parsed slurm.conf.
    ///
    /// Errors: a malformed level (the parser already refuses those with file and line).
    pub fn from_conf(conf: &SlurmConf) -> Result<LogConf, String> {
        let file = |key: &str| {
            conf.get(key)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let level = |key: &str| {
            conf.get(key)
                .map(|v| DebugLevel::parse(v).map_err(|e| format!("{key}: {e}")))
                .transpose()
                .map(Option::unwrap_or_default)
        };
        Ok(LogConf {
            slurmctld_log_file: file("SlurmctldLogFile"),
            slurmd_log_file: file("SlurmdLogFile"),
            slurmctld_debug: level("SlurmctldDebug")?,
            slurmd_debug: level("SlurmdDebug")?,
        })
    }

    /// `SlurmdLogFile` for node `node` on host `host`, `%h` and `%n` expanded; `None`
    /// when not set.
    pub fn slurmd_log_file_for(&self, host: &str, node: &str) -> Option<String> {
        self.slurmd_log_file
            .as_deref()
            .map(|t| expand_node_pattern(t, host, node))
    }
}

/// `template` with `%h` replaced by `host` and `%n` by `node`, as slurmd expands its
/// `SlurmdLogFile` (and `SlurmdPidFile`, `SlurmdSpoolDir`); any other `%` is kept.
pub fn expand_node_pattern(template: &str, host: &str, node: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('%', Some('h')) => {
                chars.next();
                out.push_str(host);
            }
            ('%', Some('n')) => {
                chars.next();
                out.push_str(node);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn levels_are_read_by_slurms_names_and_numbers() {
        let names = [
            "quiet", "fatal", "error", "info", "verbose", "debug", "debug2", "debug3", "debug4",
            "debug5",
        ];
        for (n, name) in names.iter().enumerate() {
            let by_name = DebugLevel::parse(name).unwrap();
            assert_eq!(by_name, DebugLevel::parse(&n.to_string()).unwrap());
            assert_eq!(by_name.name(), *name);
            assert_eq!(by_name.number() as usize, n);
            assert_eq!(by_name.to_string(), *name);
        }
        assert_eq!(DebugLevel::parse("DEBUG2"), Ok(DebugLevel::Debug2));
        assert_eq!(DebugLevel::parse(" Verbose "), Ok(DebugLevel::Verbose));
        assert_eq!("info".parse::<DebugLevel>(), Ok(DebugLevel::Info));
        assert_eq!(DebugLevel::default(), DebugLevel::Info);
        for bad in ["", "10", "-1", "warn", "debug6", "debug1", "info2"] {
            let e = DebugLevel::parse(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
    }

    #[test]
    fn each_step_is_one_level_louder_up_to_debug5() {
        assert_eq!(DebugLevel::Info.raised(0), DebugLevel::Info);
        assert_eq!(DebugLevel::Info.raised(1), DebugLevel::Verbose);
        assert_eq!(DebugLevel::Info.raised(2), DebugLevel::Debug);
        assert_eq!(DebugLevel::Error.raised(1), DebugLevel::Info);
        assert_eq!(DebugLevel::Quiet.raised(3), DebugLevel::Info);
        assert_eq!(DebugLevel::Debug4.raised(9), DebugLevel::Debug5);
        assert_eq!(DebugLevel::Info.raised(u8::MAX), DebugLevel::Debug5);
        assert!(DebugLevel::Quiet < DebugLevel::Fatal && DebugLevel::Debug < DebugLevel::Debug5);
    }

    #[test]
    fn node_patterns_expand_host_and_node_names() {
        assert_eq!(
            expand_node_pattern("/var/log/slurm/slurmd.%n.log", "h1", "n01"),
            "/var/log/slurm/slurmd.n01.log"
        );
        assert_eq!(
            expand_node_pattern("/l/%h/%n-%h.log", "host", "n1"),
            "/l/host/n1-host.log"
        );
        // Other patterns, and a lone % at the end, are left as written.
        assert_eq!(expand_node_pattern("/l/%x%%n%", "h", "n"), "/l/%x%n%");
    }

    #[test]
    fn settings_come_from_slurm_conf_with_slurms_defaults() {
        let conf = |extra: &str| {
            crate::slurm_conf::parse_str(
                &format!("ClusterName=c\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n{extra}"),
                Path::new("slurm.conf"),
            )
        };
        let plain = LogConf::from_conf(&conf("").unwrap()).unwrap();
        assert_eq!(plain, LogConf::default());
        assert_eq!(plain.slurmctld_debug, DebugLevel::Info);
        assert_eq!(plain.slurmd_log_file_for("h", "n1"), None);

        let set = LogConf::from_conf(
            &conf(
                "SlurmctldLogFile=/var/log/ctld.log\nSlurmdLogFile=/var/log/d.%n.log\n\
                 SlurmctldDebug=debug2\nSlurmdDebug=4\n",
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(set.slurmctld_log_file.as_deref(), Some("/var/log/ctld.log"));
        assert_eq!(
            set.slurmd_log_file_for("h", "n1").as_deref(),
            Some("/var/log/d.n1.log")
        );
        assert_eq!(set.slurmctld_debug, DebugLevel::Debug2);
        assert_eq!(set.slurmd_debug, DebugLevel::Verbose);

        // A malformed level is an error at its line, as other malformed values are.
        let e = conf("SlurmdDebug=chatty\n").unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains("invalid level 'chatty'"), "{e}");
    }
}
