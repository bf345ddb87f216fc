//! How the binaries (`sluice`, `sluice-commands`, `sluice-stepd`) are built.
//!
//! Position-independent, as the toolchain builds it, so that the binary's own code and
//! data are placed at a random address like everything else (the agent runs as root).
//! A site that would rather have the commands start faster may build with
//! `SLUICE_NO_PIE=1`: a position-dependent executable (`-no-pie`) spares the dynamic
//! loader some 17,000 relocations at every start — writing to, and so copying, about 70
//! pages of the binary's data, a fifth of the CPU time of `sbatch --version`.
//!
//! In a release build the linker lays out the code of `sluice` in the order
//! `layout/sluice.order` gives (recorded from a running cluster by `layout/record`): what
//! the idle controller runs, then what jobs add, then what only starting runs. The kernel
//! maps a program's code in windows around each page that runs, so code that runs
//! together and lies together is mapped once: the idle controller holds some 1.5 MiB of
//! its code rather than 10 MiB with the functions where the compiler left them. (The
//! commands' start gained nothing measurable from an order of their own: their page
//! faults are the loader's and their data's, not their code's.) The order is given to the linker that
//! Rust's toolchain itself uses on x86-64 Linux (its own `lld`, since Rust 1.90), which
//! reads it (`--symbol-ordering-file`), which a trial link of an empty program checks; a
//! build with another linker (set in `RUSTFLAGS`, `CARGO_TARGET_<TRIPLE>_LINKER` or
//! Cargo's configuration), for another target, or with `SLUICE_NO_LAYOUT=1` leaves it
//! out. A function the list names that the build does not have is passed over: a stale
//! list costs only the layout (`layout/check` says how much of it still matches).
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
    layout();
}

/// Gives the linker `layout/sluice.order` for the `sluice` binary, where it reads one
/// ([`orders`]).
fn layout() {
    println!("cargo:rerun-if-env-changed=SLUICE_NO_LAYOUT");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let file = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("layout/sluice.order");
    if !file.is_file() {
        return;
    }
    println!("cargo:rerun-if-changed={}", file.display());
    if orders() {
        println!(
            "cargo:rustc-link-arg-bin=sluice=-Wl,--symbol-ordering-file={}",
            file.display()
        );
        // The list names functions of the build it was recorded from; those this build
        // lacks are not worth a warning each.
        println!("cargo:rustc-link-arg-bin=sluice=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether this build's linker reads a symbol order: a release build for x86-64 Linux,
/// no other linker named in the flags, the environment or Cargo's configuration
/// (`RUSTC_LINKER`), no `SLUICE_NO_LAYOUT=1`, and a trial link of an empty program
/// with an empty order that succeeds (Rust's own `lld`, its default linker there since
/// Rust 1.90 where the toolchain was built with it, reads one; GNU ld does not).
fn orders() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("SLUICE_NO_LAYOUT") == "1"
        || var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || !var("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty()
        || !var("RUSTC_LINKER").is_empty()
    {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if ["linker", "link-self-contained", "fuse-ld"]
        .iter()
        .any(|f| flags.contains(f))
    {
        return false;
    }
    let out = PathBuf::from(var("OUT_DIR"));
    let (source, order) = (out.join("layout-probe.rs"), out.join("layout-probe.order"));
    if std::fs::write(&source, "fn main() {}\n").is_err() || std::fs::write(&order, "").is_err() {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    std::process::Command::new(rustc)
        .args(["--edition", "2021", "--crate-type", "bin", "--target"])
        .arg(var("TARGET"))
        .arg("-C")
        .arg(format!(
            "link-arg=-Wl,--symbol-ordering-file={}",
            order.display()
        ))
        .arg("-o")
        .arg(out.join("layout-probe"))
        .arg(&source)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
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
