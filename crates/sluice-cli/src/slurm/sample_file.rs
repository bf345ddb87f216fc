//! Real Slurm's output as captured in `tests/samples/`: the command after `$ `, its
//! stdout, `--- stderr` and its stderr if any, and `--- exit N`.

use std::path::PathBuf;

/// One captured command and what it printed.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// File name.
    pub name: String,
    /// The command line as captured (quotes lost).
    pub command: String,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status.
    pub code: i32,
}

/// The samples of `tests/samples/<dir>` whose file name starts with `prefix`, by name.
pub fn read_dir(dir: &str, prefix: &str) -> Vec<Sample> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/samples")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let (first, body) = text.split_once('\n').unwrap();
            let at = body.rfind("--- exit ").unwrap();
            let (stdout, stderr) = match body[..at].split_once("--- stderr\n") {
                Some((o, e)) => (o.to_string(), e.to_string()),
                None => (body[..at].to_string(), String::new()),
            };
            Sample {
                name: f.file_name().unwrap().to_string_lossy().into_owned(),
                command: first.strip_prefix("$ ").unwrap().to_string(),
                stdout,
                stderr,
                code: body[at + 9..].trim().parse().unwrap(),
            }
        })
        .collect()
}
