//! Where a cluster's state lives, and how commands find it.
//!
//! Everything of one cluster sits in one *state directory*: the database, the
//! controller's socket (`ctld.sock`), the agents' sockets (`agents/NODE.sock`) and the
//! logs. Commands find it, like Slurm's find `slurm.conf`, from (in order):
//! `SLUICE_STATE_DIR`; the `StateSaveLocation` of the file named by `SLURM_CONF`; the
//! per-user default `$XDG_STATE_HOME/sluice` (or `~/.local/state/sluice`).

use std::path::{Path, PathBuf};

/// The environment variable naming the state directory.
pub const STATE_DIR_ENV: &str = "SLUICE_STATE_DIR";

/// The per-user default state directory.
pub fn default_state_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(x).join("sluice");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    home.join(".local/state/sluice")
}

/// The state directory the commands use (see the module documentation).
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(STATE_DIR_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(conf) = std::env::var_os("SLURM_CONF").filter(|v| !v.is_empty()) {
        if let Some(dir) = state_save_location(Path::new(&conf)) {
            return dir;
        }
    }
    default_state_dir()
}

/// `StateSaveLocation=` of a slurm.conf, if it sets one.
pub fn state_save_location(conf: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(conf).ok()?;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        for word in line.split_whitespace() {
            if let Some((k, v)) = word.split_once('=') {
                if k.eq_ignore_ascii_case("StateSaveLocation") && !v.is_empty() {
                    return Some(PathBuf::from(v));
                }
            }
        }
    }
    None
}

/// The controller's socket in a state directory.
pub fn controller_socket(state_dir: &Path) -> PathBuf {
    state_dir.join("ctld.sock")
}

/// A node agent's socket in a state directory.
pub fn agent_socket(state_dir: &Path, node: &str) -> PathBuf {
    state_dir.join("agents").join(format!("{node}.sock"))
}
