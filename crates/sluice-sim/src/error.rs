//! Errors of the simulator: always naming the file, and the line where there is one.

use std::path::PathBuf;

/// Why a replay could not be set up. Displayed as `FILE:LINE: message` (or `FILE: message`).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The file could not be opened or written.
    #[error("{}: {}", path.display(), sluice_proto::oserror::describe(source))]
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
    /// A malformed line `line` (1-based) of `path`.
    pub fn parse(path: &std::path::Path, line: usize, message: impl Into<String>) -> Self {
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

    /// An I/O error opening or writing `path`.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        SimError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An error reading line `line` of `path`.
    pub(crate) fn read(path: &std::path::Path, line: usize, e: std::io::Error) -> Self {
        let message =
            if e.kind() == std::io::ErrorKind::InvalidData && e.to_string().contains("UTF-8") {
                "not text (a compressed trace needs a name ending in .gz)".to_string()
            } else {
                format!("cannot read: {}", sluice_proto::oserror::describe(&e))
            };
        SimError::parse(path, line, message)
    }
}
