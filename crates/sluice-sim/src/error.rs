//! Errors of the simulator: always naming the file, and the line where there is one.

use std::path::PathBuf;

/// Why a replay could not be set up. Displayed as `FILE:LINE: message` (or `FILE: message`).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A line of the file is malformed.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The file as a whole cannot be used (no jobs, no machine size, unknown format).
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong.
        message: String,
    },
    /// The simulated machine could not be built (from a configuration or the options).
    #[error("{0}")]
    Machine(String),
}

impl SimError {
    pub(crate) fn parse(path: &std::path::Path, line: usize, message: impl Into<String>) -> Self {
        SimError::Parse {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(path: &std::path::Path, message: impl Into<String>) -> Self {
        SimError::Invalid {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        SimError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl SimError {
    /// An I/O error on `path` (for callers outside this crate writing result files).
    pub fn io_at(path: &std::path::Path, source: std::io::Error) -> Self {
        SimError::io(path, source)
    }
}
