//! `cgroup.conf`: how Slurm's `task/cgroup` plugin confines jobs, read from the file next
//! to `slurm.conf` (as Slurm reads it).
//!
//! Syntax as in `cgroup.conf(5)` of Slurm 22.05, read like [`crate::slurm_conf`]:
//! `Key=Value` pairs separated by whitespace, keys case-insensitive, `#` starts a
//! comment, a trailing `\` continues the line, `Include FILE` reads another file. A key
//! given again later wins.
//!
//! Sluice acts on `ConstrainDevices` only (see [`CgroupConf::constrain_devices`]). Memory
//! is always confined as `ConstrainRAMSpace=yes` with `ConstrainSwapSpace=yes` would, so
//! those and the other keys of `cgroup.conf(5)` are accepted (boolean ones must still
//! be `yes` or `no`) and otherwise ignored; unknown keys draw a warning with file and
//! line.

use std::path::{Path, PathBuf};

use crate::reader::ConfReader;
use crate::slurm_conf::ConfError;

/// The keys of `cgroup.conf(5)` whose values are booleans.
const BOOLEAN_KEYS: &[&str] = &[
    "cgroupautomount",
    "constraincores",
    "constraindevices",
    "constrainkmemspace",
    "constrainramspace",
    "constrainswapspace",
    "ignoresystemd",
    "ignoresystemdonfailure",
    "enablecontrollers",
    "signalchildrenprocesses",
];

/// The other keys of `cgroup.conf(5)` (Slurm 22.05 and later), accepted and ignored.
const OTHER_KEYS: &[&str] = &[
    "allowedkmemspace",
    "allowedramspace",
    "allowedswapspace",
    "alloweddevicesfile",
    "cgroupmountpoint",
    "cgroupplugin",
    "cgroupreleaseagentdir",
    "maxkmempercent",
    "maxrampercent",
    "maxswappercent",
    "memorylimitenforcement",
    "memorylimitthreshold",
    "memoryswappiness",
    "minkmemspace",
    "minramspace",
    "systemdtimeout",
    "taskaffinity",
];

/// A parsed cgroup.conf.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CgroupConf {
    /// The file read (the first one, for a file with `Include`s).
    pub path: PathBuf,
    /// `ConstrainDevices` (default no): a job may open only the GRES device files (the
    /// `File=` of gres.conf) of the devices it was allocated on a node; the others are
    /// denied to its processes through the devices cgroup.
    pub constrain_devices: bool,
    /// Warnings (`FILE:LINE: ...`) for keys that were ignored.
    pub warnings: Vec<String>,
}

/// Parses a boolean value as Slurm does: `yes`, `true`, `up` or `1`, and `no`, `false`,
/// `down` or `0`, in any case.
///
/// Errors: any other value.
pub fn parse_bool(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "yes" | "true" | "up" | "1" => Ok(true),
        "no" | "false" | "down" | "0" => Ok(false),
        _ => Err(format!("invalid value '{value}' (yes or no)")),
    }
}

/// Reads and parses a cgroup.conf file (and the files it includes).
///
/// Errors: a file that cannot be read, a malformed value (see [`parse_str`]).
pub fn read(path: &Path) -> Result<CgroupConf, ConfError> {
    let mut p = Parser::new(path);
    p.read_file(path, 0)?;
    Ok(p.conf)
}

/// Parses cgroup.conf text; `path` is used for messages and for relative `Include`s.
///
/// Errors, each with file and line: words that are not `Key=Value`, a boolean key
/// (`ConstrainDevices`, `ConstrainRAMSpace`, ...) whose value is not one that
/// [`parse_bool`] accepts, and the reader's own (a bad `Include`, a continuation past the
/// end of the file).
pub fn parse_str(text: &str, path: &Path) -> Result<CgroupConf, ConfError> {
    let mut p = Parser::new(path);
    p.parse_text(text, path, 0)?;
    Ok(p.conf)
}

struct Parser {
    conf: CgroupConf,
}

impl Parser {
    fn new(path: &Path) -> Self {
        Parser {
            conf: CgroupConf {
                path: path.to_path_buf(),
                ..CgroupConf::default()
            },
        }
    }
}

impl ConfReader for Parser {
    fn pairs_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        for (key, value) in kv {
            let lower = key.to_ascii_lowercase();
            if BOOLEAN_KEYS.contains(&lower.as_str()) {
                let on = parse_bool(&value).map_err(|m| ConfError {
                    path: path.to_path_buf(),
                    line,
                    message: format!("{key}: {m}"),
                })?;
                if lower == "constraindevices" {
                    self.conf.constrain_devices = on;
                }
            } else if !OTHER_KEYS.contains(&lower.as_str()) {
                self.conf.warnings.push(format!(
                    "{}:{line}: unknown key '{key}' (ignored)",
                    path.display()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CgroupConf, ConfError> {
        parse_str(text, Path::new("cgroup.conf"))
    }

    #[test]
    fn constrain_devices_is_off_unless_said() {
        assert!(!parse("").unwrap().constrain_devices);
        assert!(!parse("ConstrainRAMSpace=yes\n").unwrap().constrain_devices);
        assert!(!parse("ConstrainDevices=no\n").unwrap().constrain_devices);
    }

    #[test]
    fn a_typical_file_turns_device_confinement_on() {
        let c = parse(
            "# Slurm's example\n\
             CgroupAutomount=yes\n\
             CgroupPlugin=cgroup/v2\n\
             ConstrainCores=yes\n\
             ConstrainDevices=yes   # GPUs\n\
             ConstrainRAMSpace=yes AllowedRAMSpace=100\n\
             ConstrainSwapSpace=yes \\\n  AllowedSwapSpace=0\n",
        )
        .unwrap();
        assert!(c.constrain_devices);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // Keys and values in any case; the last one wins.
        let c = parse("constraindevices=YES\nCONSTRAINDEVICES=True\n").unwrap();
        assert!(c.constrain_devices);
        let c = parse("ConstrainDevices=yes\nConstrainDevices=0\n").unwrap();
        assert!(!c.constrain_devices);
    }

    #[test]
    fn bad_booleans_are_errors_with_file_and_line() {
        let e = parse("CgroupAutomount=yes\nConstrainDevices=maybe\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cgroup.conf:2: ConstrainDevices: invalid value 'maybe' (yes or no)"
        );
        let e = parse("ConstrainRAMSpace=\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cgroup.conf:1: ConstrainRAMSpace: invalid value '' (yes or no)"
        );
    }

    #[test]
    fn unknown_keys_are_warned_about() {
        let c = parse("ConstrainDevices=yes\nConstrainGPUs=yes\n").unwrap();
        assert!(c.constrain_devices);
        assert_eq!(
            c.warnings,
            ["cgroup.conf:2: unknown key 'ConstrainGPUs' (ignored)"]
        );
    }

    #[test]
    fn includes_are_read_relative_to_the_file() {
        let dir = std::env::temp_dir().join(format!("sluice-cgroup-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("devices.conf"), "ConstrainDevices=yes\n").unwrap();
        std::fs::write(dir.join("cgroup.conf"), "Include devices.conf\n").unwrap();
        let c = read(&dir.join("cgroup.conf")).unwrap();
        assert!(c.constrain_devices);
        assert_eq!(c.path, dir.join("cgroup.conf"));
        let e = read(&dir.join("missing.conf")).unwrap_err();
        assert_eq!(e.line, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
