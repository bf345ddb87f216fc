//! The Slurm commands, as Sluice provides them: one binary (`sluice-commands`, or
//! `sluice`), linked under each name.

pub mod allocate;
pub mod common;
pub mod format;
pub mod help;
pub mod het_alloc;
pub mod job_help;
pub mod json_c;
pub mod long_format;
#[cfg(test)]
mod option_tables;
pub mod print_fields;
pub mod sacct;
mod sacct_array;
pub mod sacctmgr;
pub mod salloc;
#[cfg(test)]
mod sample_file;
pub mod sbatch;
pub mod scancel;
mod scancel_live;
mod scancel_refused;
mod scancel_steps;
pub mod scontrol;
mod scontrol_array;
pub mod scontrol_detail;
pub mod scontrol_ha;
pub mod scontrol_help;
mod scontrol_jobs;
pub mod scontrol_resv;
pub mod scontrol_show;
pub mod scontrol_steps;
pub mod scontrol_token;
pub mod scontrol_update;
pub mod scontrol_write;
pub mod sdiag;
pub mod seff;
pub mod sinfo;
pub mod sinfo_json;
pub mod sinfo_records;
pub mod sinfo_states;
pub mod sprio;
pub mod squeue;
pub mod squeue_json;
pub(crate) mod squeue_sort;
pub mod squeue_steps;
pub(crate) mod squeue_verbose;
pub mod sreport;
pub mod srun;
mod srun_het;
mod srun_pty;
pub mod sshare;
pub mod sstat;
pub mod units;
pub mod update_keys;
pub mod usage_fields;

/// The commands this binary answers to when called by their name.
pub const COMMANDS: &[&str] = &[
    "sbatch", "srun", "salloc", "squeue", "scancel", "sinfo", "scontrol", "sacct", "sacctmgr",
    "sprio", "sshare", "sdiag", "seff", "sreport", "sstat",
];

/// The name a binary was run by (`argv[0]`'s file name), and, where it is a Slurm
/// command's, that command run with the rest of `args` (its exit status); getopt's
/// messages then start with `argv[0]` as run.
pub fn run_by_name(args: &[String]) -> (String, Option<i32>) {
    let name = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !COMMANDS.contains(&name.as_str()) {
        return (name, None);
    }
    common::set_program(&args[0]);
    let code = dispatch(&name, args[1..].to_vec());
    (name, code)
}

/// Runs the Slurm command `name` with `args`; returns its exit status.
pub fn dispatch(name: &str, args: Vec<String>) -> Option<i32> {
    if !COMMANDS.contains(&name) {
        return None;
    }
    // Like the C commands, end quietly when a reader goes away (`scontrol show
    // hostnames | head -1`) rather than fail on a broken pipe.
    // SAFETY: called before any thread starts; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    Some(match name {
        "sbatch" => sbatch::main(args),
        "srun" => srun::main(args),
        "salloc" => salloc::main(args),
        "squeue" => squeue::main(args),
        "scancel" => scancel::main(args),
        "sinfo" => sinfo::main(args),
        "scontrol" => scontrol::main(args),
        "sacct" => sacct::main(args),
        "sacctmgr" => sacctmgr::main(args),
        "sprio" => sprio::main(args),
        "sshare" => sshare::main(args),
        "sdiag" => sdiag::main(args),
        "seff" => seff::main(args),
        "sreport" => sreport::main(args),
        "sstat" => sstat::main(args),
        _ => return None,
    })
}
