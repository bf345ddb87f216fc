//! How the binaries (`sluice`, `sluice-commands`, `sluice-stepd`) are linked.
//!
//! Position-independent, as the toolchain builds it, so that the binary's own code and
//! data are placed at a random address like everything else (the agent runs as root).
//! A site that would rather have the commands start faster may build with
//! `SLUICE_NO_PIE=1`: a position-dependent executable (`-no-pie`) spares the dynamic
//! loader some 17,000 relocations at every start — writing to, and so copying, about 70
//! pages of the binary's data, a fifth of the CPU time of `sbatch --version`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SLUICE_NO_PIE");
    let no_pie = std::env::var("SLUICE_NO_PIE").is_ok_and(|v| v == "1");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && no_pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
