//! How Slurm reads its configuration files (`slurm.conf`, `gres.conf`): `#` starts a
//! comment, a trailing `\` continues a line, `Include FILE` reads another file (relative
//! to the including file's directory, at most eight deep), and every other line is
//! `Key=Value` words.

use std::path::Path;

use crate::slurm_conf::ConfError;
use crate::tokenize::pairs;

/// How deep `Include` may nest.
const MAX_INCLUDE_DEPTH: usize = 8;

/// A parser of one kind of configuration file, fed line by line.
pub(crate) trait ConfReader {
    /// One logical line of `path` (starting at line `line`) as `(key, value)` words, in
    /// order; never empty.
    fn pairs_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError>;

    /// Reads and parses the file at `path`, `depth` includes deep.
    ///
    /// Errors: the file cannot be read (line 0), or a line is malformed.
    fn read_file(&mut self, path: &Path, depth: usize) -> Result<(), ConfError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfError {
            path: path.to_path_buf(),
            line: 0,
            message: e.to_string(),
        })?;
        self.parse_text(&text, path, depth)
    }

    /// Parses `text`, the contents of `path`, `depth` includes deep.
    ///
    /// Errors, with file and line: includes nested too deeply or naming no file, words
    /// that are not `Key=Value`, a continuation past the end of the file, and whatever
    /// [`ConfReader::pairs_line`] refuses.
    fn parse_text(&mut self, text: &str, path: &Path, depth: usize) -> Result<(), ConfError> {
        let err = |line: usize, message: &str| ConfError {
            path: path.to_path_buf(),
            line,
            message: message.to_string(),
        };
        let mut logical = String::new();
        let mut start_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let content = raw.split('#').next().unwrap_or("");
            if logical.is_empty() {
                start_line = i + 1;
            }
            let trimmed = content.trim_end();
            if let Some(body) = trimmed.strip_suffix('\\') {
                logical.push_str(body);
                logical.push(' ');
                continue;
            }
            logical.push_str(trimmed);
            let line = std::mem::take(&mut logical);
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let first_word = line.split_whitespace().next().unwrap_or("");
            if first_word.eq_ignore_ascii_case("include") {
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(err(start_line, "Include nested too deeply"));
                }
                let target = line[first_word.len()..].trim();
                if target.is_empty() {
                    return Err(err(start_line, "Include without a file name"));
                }
                let target = Path::new(target);
                let full = if target.is_absolute() {
                    target.to_path_buf()
                } else {
                    path.parent().unwrap_or(Path::new(".")).join(target)
                };
                self.read_file(&full, depth + 1)?;
                continue;
            }
            let kv = pairs(line).map_err(|m| err(start_line, &m))?;
            self.pairs_line(kv, path, start_line)?;
        }
        if !logical.trim().is_empty() {
            return Err(err(start_line, "line continued past the end of the file"));
        }
        Ok(())
    }
}
