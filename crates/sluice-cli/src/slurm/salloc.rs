//! `salloc`: obtain an allocation, run a command (by default the user's shell) on this
//! host inside it, give the allocation up when the command ends.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::Command as Process;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice_conf::options::{Command, JobOptions};
use sluice_proto::types::{ConfigInfo, JobRecord, JobState};

use super::allocate::{allocate, complete, complete_with};
use super::common::{controller, fail, USAGE_EXIT, VERSION};
use super::sbatch::describe_job;

const ME: &str = "salloc";

/// How often salloc checks that its allocation still stands.
const WATCH: Duration = Duration::from_millis(500);

/// Runs `salloc`; its exit status is the command's.
pub fn main(args: Vec<String>) -> i32 {
    // `salloc OPTS : OPTS ... CMD`: one group of options per heterogeneous job
    // component.
    let (components, mut argv) = super::het_alloc::salloc_parts(&args);
    let opts = components[0].clone();
    if opts.version {
        println!("{VERSION}");
        return 0;
    }
    if opts.help || opts.usage {
        let text = if opts.help {
            super::job_help::help(Command::Salloc)
        } else {
            super::job_help::usage(Command::Salloc)
        };
        print!("{text}");
        return 0;
    }
    if let Err(m) = sluice_conf::options::check_gpus_per_socket(&opts) {
        fail(ME, m, 1);
    }
    // Strings Slurm's controller refuses as too long that only the client sees (the
    // mail address): refused as Slurm refuses the allocation.
    for o in &components {
        if let Err(e) = sluice_conf::options::check_lengths(o) {
            fail(ME, format!("Job submit/allocate failed: {}", e.message), 1);
        }
    }
    if argv.is_empty() {
        argv = vec![login_shell()];
    }
    // Slurm names every salloc job "interactive" (or "no-shell").
    let name = opts.job_name.clone().unwrap_or_else(|| {
        if opts.no_shell {
            "no-shell".into()
        } else {
            "interactive".into()
        }
    });
    // Slurm's salloc names no command for its job (`Command=(null)`).
    let line = super::common::submit_line();
    let desc = if components.len() > 1 {
        super::het_alloc::describe_het(ME, &components, &name, "(null)", &line)
    } else {
        match describe_job(&opts, name, String::new(), "(null)".into(), true) {
            Ok(mut d) => {
                d.submit_line = Some(line);
                d
            }
            Err(e) => fail(ME, e, USAGE_EXIT),
        }
    };
    // `-D`: salloc itself works there (its command starts there), entered before
    // anything is allocated, as Slurm's salloc does; SLURM_SUBMIT_DIR stays where it
    // was run.
    if opts.chdir.is_some() {
        if let Err(e) = std::env::set_current_dir(&desc.work_dir) {
            fail(
                ME,
                format!(
                    "chdir({}): {}",
                    desc.work_dir,
                    sluice_proto::oserror::describe(&e)
                ),
                1,
            );
        }
    }
    let client = controller();
    let record = allocate(&client, ME, &desc);
    let job = record.id;
    if opts.no_shell {
        // The allocation stays until its time limit or scancel.
        return 0;
    }
    let cluster = client
        .get::<ConfigInfo>("/v1/config")
        .map(|c| c.cluster_name)
        .unwrap_or_default();
    let env = if record.het.is_some() {
        let records = super::het_alloc::component_records(&client, ME, record);
        let mut env: BTreeMap<String, String> = std::env::vars().collect();
        env.extend(super::het_alloc::salloc_variables(&records, &cluster));
        env
    } else {
        allocation_environment(&record, &opts, &cluster)
    };

    // The command is the terminal's foreground job: salloc itself lets keyboard
    // signals pass to it, as Slurm's does.
    // A hang-up or termination of salloc itself gives the allocation up (see `watch`).
    super::allocate::catch();
    // SAFETY: setting dispositions to SIG_IGN before spawning; no handlers involved.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let mut cmd = Process::new(&argv[0]);
    cmd.args(&argv[1..]).env_clear().envs(&env);
    // SAFETY: only async-signal-safe calls (signal) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(_) => {
            eprintln!(
                "{ME}: error: _fork_command: Unable to find command \"{}\"",
                argv[0]
            );
            eprintln!("{ME}: Relinquishing job allocation {job}");
            complete(&client, job, 1);
            return 1;
        }
    };
    let revoked = Arc::new(AtomicBool::new(false));
    watch(job, child.id() as i32, opts.kill_command, revoked.clone());
    let status = child.wait();
    // An exit code (even above 128, as a shell may give) or the killing signal.
    let (exit_code, signal) = match &status {
        Ok(s) => match s.code() {
            Some(c) => (c, 0),
            None => (
                0,
                std::os::unix::process::ExitStatusExt::signal(s).unwrap_or(0),
            ),
        },
        Err(_) => (1, 0),
    };
    let code = if signal != 0 { 128 + signal } else { exit_code };
    if !revoked.load(Ordering::SeqCst) {
        eprintln!("{ME}: Relinquishing job allocation {job}");
        complete_with(&client, job, exit_code, signal);
    } else if signal != 0 {
        // Killed (by --kill-command's signal): Slurm's salloc exits 1 then.
        return 1;
    }
    code
}

/// Watches allocation `job` while the command runs: when it ends for another reason
/// (its time limit, `scancel`), tells the user, and with `--kill-command` signals the
/// command (`pid`).
fn watch(job: u64, pid: i32, kill: Option<i32>, revoked: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let client = controller();
        loop {
            std::thread::sleep(WATCH);
            if let Some(sig) = super::allocate::caught() {
                // salloc was told to go: its command goes with it, and the allocation.
                // SAFETY: kill(2) on the command's pid; no memory involved.
                unsafe {
                    libc::kill(pid, sig);
                }
                eprintln!("{ME}: Relinquishing job allocation {job}");
                complete(&client, job, 128 + sig);
                std::process::exit(1);
            }
            let Ok(r) = client.get::<JobRecord>(&format!("/v1/jobs/{job}")) else {
                continue;
            };
            if !r.state.is_finished() {
                continue;
            }
            revoked.store(true, Ordering::SeqCst);
            if r.state == JobState::Timeout {
                eprintln!(
                    "{ME}: Job {job} has exceeded its time limit and its allocation has been revoked."
                );
            } else {
                eprintln!("{ME}: Job allocation {job} has been revoked.");
            }
            if let Some(sig) = kill {
                // SAFETY: kill(2) on the command's pid; no memory involved.
                unsafe {
                    libc::kill(pid, sig);
                }
            }
            return;
        }
    });
}

/// The shell salloc runs without a command: the user's login shell from the password
/// database, else `$SHELL`, else `/bin/sh`.
fn login_shell() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.shell.display().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("SHELL").ok())
        .unwrap_or_else(|| "/bin/sh".into())
}

/// The environment of salloc's command: salloc's own, with the allocation's `SLURM_*`
/// variables (those Slurm 22.05's salloc sets; no per-task ones such as
/// `SLURM_PROCID`, which belong to steps).
pub fn allocation_environment(
    r: &JobRecord,
    opts: &JobOptions,
    cluster: &str,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.extend(sluice_ctld::state::allocation_variables(r, cluster));
    env.insert("SLURM_NODE_ALIASES".into(), "(null)".into());
    if opts.ntasks.is_some() {
        env.insert("SLURM_NTASKS".into(), r.ntasks.to_string());
        env.insert("SLURM_NPROCS".into(), r.ntasks.to_string());
    }
    env
}
