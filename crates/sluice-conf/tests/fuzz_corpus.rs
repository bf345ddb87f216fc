//! Runs every input of the fuzz corpus (`fuzz/corpus/<target>/`, the seeds and the
//! regressions fuzzing found) through the property check its cargo-fuzz target uses
//! (`sluice_conf::fuzzing`), so that `cargo test` guards them without nightly or
//! cargo-fuzz. See `fuzz/README.md`.

use std::collections::BTreeSet;
use std::fs;
use std::panic;
use std::path::{Path, PathBuf};

use sluice_conf::fuzzing::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The names in `dir` (files or folders, as `want_dirs` says), with `suffix` removed.
fn names_in(dir: &Path, want_dirs: bool, suffix: &str) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.is_dir() == want_dirs)
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            name.strip_suffix(suffix).map(str::to_string)
        })
        .collect()
}

#[test]
fn every_corpus_input_keeps_its_properties() {
    let mut failures = Vec::new();
    for (target, check) in TARGETS {
        let dir = fuzz_dir().join("corpus").join(target);
        let mut files: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus of {target} missing: {}: {e}", dir.display()))
            .map(|entry| entry.expect("directory entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(
            !files.is_empty(),
            "corpus of {target} is empty: {}",
            dir.display()
        );
        for file in files {
            let data = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if panic::catch_unwind(|| check(&data)).is_err() {
                failures.push(format!("{target}: {}", file.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "inputs that break a property (messages above):\n{}",
        failures.join("\n")
    );
}

#[test]
fn targets_corpora_and_checks_match() {
    let checks: BTreeSet<String> = TARGETS.iter().map(|(t, _)| t.to_string()).collect();
    assert_eq!(
        names_in(&fuzz_dir().join("fuzz_targets"), false, ".rs"),
        checks,
        "fuzz/fuzz_targets/*.rs and sluice_conf::fuzzing::TARGETS differ"
    );
    assert_eq!(
        names_in(&fuzz_dir().join("corpus"), true, ""),
        checks,
        "fuzz/corpus/* and sluice_conf::fuzzing::TARGETS differ"
    );
}
