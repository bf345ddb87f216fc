//! How the binaries (`sluice`, `sluice-commands`, `sluice-stepd`) are built.
//!
//! Position-independent, as the toolchain builds it, so that the binary's own code and
//! data are placed at a random address like everything else (the agent runs as root).
//! A site that would rather have the commands start faster may build with
//! `SLUICE_NO_PIE=1`: a position-dependent executable (`-no-pie`) spares the dynamic
//! loader some 17,000 relocations at every start — writing to, and so copying, about 70
//! pages of the binary's data, a fifth of the CPU time of `sbatch --version`.
//!
//! Each build is named by what it was built from (`SLUICE_BUILD_ID`: the version and a
//! digest of the workspace's sources and lock file), so that `sluice` starts
//! `sluice-commands` and `sluice-stepd` only when they are of its own build, never a
//! stale one left beside it (`--build-id`).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SLUICE_NO_PIE");
    let no_pie = std::env::var("SLUICE_NO_PIE").is_ok_and(|v| v == "1");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && no_pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rustc-env=SLUICE_BUILD_ID={}", build_id());
}

/// The version and an FNV-1a digest of every crate's sources (`src/`, without its test
/// modules) and manifest and of the lock file (each watched, so that a change builds a
/// new identifier).
fn build_id() -> String {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("../..");
    let mut files = Vec::new();
    let mut watched = Vec::new();
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        for dir in crates.flatten().map(|c| c.path()) {
            let src = dir.join("src");
            if src.is_dir() {
                collect(&src, &mut files);
                watched.push(src);
            }
            watched.push(dir.join("Cargo.toml"));
        }
    }
    watched.push(root.join("Cargo.lock"));
    // A path that does not exist would run this script again at every build.
    watched.retain(|p| p.exists());
    files.extend(watched.iter().filter(|p| p.is_file()).cloned());
    files.sort();
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            digest ^= u64::from(*b);
            digest = digest.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in &files {
        let name = file.strip_prefix(&root).unwrap_or(file);
        feed(name.to_string_lossy().as_bytes());
        feed(&std::fs::read(file).unwrap_or_default());
    }
    // Each file, not its directory: a change to a test module alone (not hashed)
    // builds nothing again. A new file is declared in a watched one.
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    format!(
        "{}-{digest:016x}",
        std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
    )
}

/// The files under `dir`, recursively.
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        // Tests are no part of a build, nor an editor's files (`.x.swp`, `x~`).
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        if name == "tests" || name == "tests.rs" || name.starts_with('.') || name.ends_with('~') {
            continue;
        }
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}
