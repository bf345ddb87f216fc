//! How the `sluice` binary is linked.
//!
//! On Linux, as a position-dependent executable (`-no-pie`). The Slurm commands are
//! short-lived processes of this one large binary (and so is each job's supervisor): a
//! position-independent one has the dynamic loader apply some 17,000 relocations at
//! every start, writing to, and so copying, about 70 pages of the binary's data — a
//! fifth of the CPU time of `sbatch --version`. The price: the binary's own code and
//! data are not placed at a random address (shared libraries, stack and heap still
//! are). Building with `SLUICE_PIE=1` keeps a position-independent executable.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SLUICE_PIE");
    let pie = std::env::var("SLUICE_PIE").is_ok_and(|v| v == "1");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && !pie {
        println!("cargo:rustc-link-arg-bin=sluice=-no-pie");
    }
}
