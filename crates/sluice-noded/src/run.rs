//! Running processes for jobs: batch scripts and srun tasks, as their owners.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::{Gid, Pid, Uid};
use sluice_proto::types::{JobEnded, JobRecord, JobState, LaunchBatch, LaunchTasks, TaskEvent};
use tokio::sync::mpsc::Sender;

use crate::{leftovers, now, report, Agent};

/// Who a process runs as.
#[derive(Clone)]
struct Owner {
    uid: u32,
    gid: u32,
    user: CString,
    /// The agent must switch to this user (it is root and the job is someone else's).
    switch: bool,
}

impl Owner {
    fn of(agent: &Agent, r: &JobRecord) -> Result<Owner, String> {
        let switch = agent.own_uid == 0 && r.uid != 0;
        if agent.own_uid != 0 && r.uid != agent.own_uid {
            return Err(format!(
                "this node's agent runs as uid {} and cannot run jobs of uid {}",
                agent.own_uid, r.uid
            ));
        }
        Ok(Owner {
            uid: r.uid,
            gid: r.gid,
            user: CString::new(r.user.clone())
                .unwrap_or_else(|_| CString::new("nobody").expect("static")),
            switch,
        })
    }

    /// A command that starts in a session of its own, as this owner.
    fn command(
        &self,
        program: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: &str,
    ) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args).env_clear().envs(env.iter().cloned());
        if Path::new(cwd).is_dir() {
            cmd.current_dir(cwd);
        } else {
            cmd.current_dir("/tmp");
        }
        let owner = self.clone();
        // SAFETY: between fork and exec only async-signal-safe calls are made: setsid,
        // initgroups, setgid, setuid (no allocation: the user name was made beforehand).
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                if owner.switch {
                    nix::unistd::initgroups(&owner.user, Gid::from_raw(owner.gid))
                        .map_err(std::io::Error::from)?;
                    nix::unistd::setgid(Gid::from_raw(owner.gid)).map_err(std::io::Error::from)?;
                    nix::unistd::setuid(Uid::from_raw(owner.uid)).map_err(std::io::Error::from)?;
                }
                Ok(())
            });
        }
        cmd
    }

    /// Opens (creating its directory) an output file for the owner.
    fn open_output(&self, path: &str, append: bool) -> std::io::Result<File> {
        if let Some(dir) = Path::new(path).parent() {
            if !dir.exists() {
                std::fs::create_dir_all(dir)?;
                if self.switch {
                    let _ = nix::unistd::chown(
                        dir,
                        Some(Uid::from_raw(self.uid)),
                        Some(Gid::from_raw(self.gid)),
                    );
                }
            }
        }
        let f = OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .mode(0o644)
            .open(path)?;
        if self.switch {
            use std::os::fd::AsRawFd;
            let _ = nix::unistd::fchown(
                f.as_raw_fd(),
                Some(Uid::from_raw(self.uid)),
                Some(Gid::from_raw(self.gid)),
            );
        }
        Ok(f)
    }
}

fn state_of(status: &ExitStatus) -> (JobState, i32, i32) {
    match (status.code(), status.signal()) {
        (Some(0), _) => (JobState::Completed, 0, 0),
        (Some(c), _) => (JobState::Failed, c, 0),
        (None, Some(s)) => (JobState::Failed, 0, s),
        _ => (JobState::Failed, 1, 0),
    }
}

/// Runs a batch script to its end and reports it.
pub(crate) async fn batch(agent: Arc<Agent>, order: LaunchBatch) {
    let r = &order.job;
    let id = r.id;
    let finish = |state: JobState, code: i32, signal: i32| JobEnded {
        job_id: id,
        run: r.restarts,
        node: agent.node.clone(),
        state,
        exit_code: code,
        signal,
        end: now(),
    };
    let started = start_batch(&agent, &order);
    let mut child = match started {
        Ok(c) => c,
        Err(why) => {
            // Tell the user where they will look.
            if let Ok(owner) = Owner::of(&agent, r) {
                if let Ok(mut f) = owner.open_output(&r.stderr, true) {
                    let _ = writeln!(f, "slurmstepd: error: {why}");
                }
            }
            agent.jobs.lock().expect("lock").remove(&id);
            report(agent.clone(), finish(JobState::Failed, 1, 0)).await;
            return;
        }
    };
    let pid = child.id() as i32;
    if let Some(j) = agent.jobs.lock().expect("lock").get_mut(&id) {
        j.pid = Some(pid);
    }
    let key = format!("{id}.batch");
    leftovers::remember(&agent.jobs_dir(), &key, pid);
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let start = r.start_time.unwrap_or_else(now);
    let deadline = r.time_limit.map(|l| start + l);
    let mut signal_at = r
        .desc
        .signal
        .and_then(|(sig, before, batch_only)| deadline.map(|d| (d - before, sig, batch_only)));
    let mut timed_out = false;
    let until = |t: i64| tokio::time::sleep(Duration::from_secs((t - now()).max(0) as u64));
    let status = loop {
        let sig_sleep = until(signal_at.map_or(i64::MAX / 4, |s| s.0));
        let limit_sleep = until(if timed_out {
            i64::MAX / 4
        } else {
            deadline.unwrap_or(i64::MAX / 4)
        });
        tokio::select! {
            st = &mut done_rx => break st.ok().and_then(Result::ok),
            _ = sig_sleep, if signal_at.is_some() => {
                let (_, sig, batch_only) = signal_at.take().expect("guarded");
                signal_job(&agent, id, sig, batch_only);
            }
            _ = limit_sleep, if deadline.is_some() && !timed_out => {
                timed_out = true;
                if let Some(j) = agent.jobs.lock().expect("lock").get_mut(&id) {
                    j.ending.get_or_insert(JobState::Timeout);
                }
                kill_job(agent.clone(), id, order.kill_wait);
            }
        }
    };
    leftovers::forget(&agent.jobs_dir(), &key);
    // The job stays listed (as running, for registrations) until the controller has
    // its end, so that a controller restarting meanwhile does not take it for lost;
    // its processes are gone, so nothing signals them any more.
    let run = r.restarts;
    let ending = agent
        .jobs
        .lock()
        .expect("lock")
        .get_mut(&id)
        .filter(|j| j.run == run)
        .and_then(|j| {
            j.pid = None;
            j.task_groups.clear();
            j.finished = true;
            j.ending
        });
    let (state, code, signal) = match &status {
        Some(s) => state_of(s),
        None => (JobState::Failed, 1, 0),
    };
    let state = ending.unwrap_or(state);
    report(agent.clone(), finish(state, code, signal)).await;
    let mut jobs = agent.jobs.lock().expect("lock");
    if jobs.get(&id).is_some_and(|j| j.run == run) {
        jobs.remove(&id);
    }
    drop(jobs);
    let _ = std::fs::remove_file(script_path(&agent, r));
}

/// Where a run's batch script is written: one file per run, so a run that is ending
/// never removes the script of the run after it.
fn script_path(agent: &Agent, r: &JobRecord) -> std::path::PathBuf {
    agent.jobs_dir().join(format!("{}.{}.sh", r.id, r.restarts))
}

fn start_batch(agent: &Agent, order: &LaunchBatch) -> Result<std::process::Child, String> {
    let r = &order.job;
    let owner = Owner::of(agent, r)?;
    let script = script_path(agent, r);
    std::fs::write(&script, &r.desc.script).map_err(|e| format!("cannot write the script: {e}"))?;
    let _ = std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700));
    if owner.switch {
        let _ = nix::unistd::chown(
            &script,
            Some(Uid::from_raw(owner.uid)),
            Some(Gid::from_raw(owner.gid)),
        );
    }
    let out = owner
        .open_output(&r.stdout, r.desc.append)
        .map_err(|e| format!("Could not open stdout file {}: {e}", r.stdout))?;
    let err = if r.stderr == r.stdout {
        out.try_clone().map_err(|e| e.to_string())?
    } else {
        owner
            .open_output(&r.stderr, r.desc.append)
            .map_err(|e| format!("Could not open stderr file {}: {e}", r.stderr))?
    };
    let input: Stdio = if r.stdin == "/dev/null" {
        Stdio::null()
    } else {
        File::open(&r.stdin)
            .map(Stdio::from)
            .map_err(|e| format!("Could not open stdin file {}: {e}", r.stdin))?
    };
    let mut cmd = owner.command(
        &script.display().to_string(),
        &[],
        &order.environment,
        &r.desc.work_dir,
    );
    cmd.stdout(out).stderr(err).stdin(input);
    // The script was just written: a process forked elsewhere in the agent at that
    // moment holds the written file open until it execs, and exec then fails with
    // ETXTBSY. That passes within moments; try again.
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e)
                if e.raw_os_error() == Some(nix::errno::Errno::ETXTBSY as i32) && tries < 100 =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other.map_err(|e| format!("cannot run the batch script: {e}")),
        }
    }
}

/// Sends `signal` to a job's processes here: the batch shell only, or its srun tasks
/// (Slurm's default), or the batch shell when it runs no tasks.
pub(crate) fn signal_job(agent: &Agent, job: u64, signal: i32, batch_only: bool) {
    let Ok(sig) = Signal::try_from(signal) else {
        return;
    };
    let jobs = agent.jobs.lock().expect("lock");
    let Some(j) = jobs.get(&job) else { return };
    if batch_only || j.task_groups.is_empty() {
        if let Some(pid) = j.pid {
            let _ = kill(Pid::from_raw(pid), sig);
        }
    }
    if !batch_only {
        for g in &j.task_groups {
            let _ = killpg(Pid::from_raw(*g), sig);
        }
    }
}

/// Ends a job at the controller's request: reported as `state`.
pub(crate) fn terminate(agent: Arc<Agent>, job: u64, state: JobState) {
    if let Some(j) = agent.jobs.lock().expect("lock").get_mut(&job) {
        j.ending.get_or_insert(state);
    } else {
        return;
    }
    kill_job(agent, job, 30);
}

/// SIGCONT and SIGTERM to all of a job's process groups, SIGKILL `kill_wait` seconds
/// later if any remain.
fn kill_job(agent: Arc<Agent>, job: u64, kill_wait: i64) {
    let groups = move |agent: &Agent| -> Vec<i32> {
        let jobs = agent.jobs.lock().expect("lock");
        jobs.get(&job)
            .map(|j| {
                j.pid
                    .into_iter()
                    .chain(j.task_groups.iter().copied())
                    .collect()
            })
            .unwrap_or_default()
    };
    for g in groups(&agent) {
        let _ = killpg(Pid::from_raw(g), Signal::SIGCONT);
        let _ = killpg(Pid::from_raw(g), Signal::SIGTERM);
    }
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(kill_wait.max(0) as u64)).await;
        for g in groups(&agent) {
            let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
        }
    });
}

/// Ends every job here as the agent stops: SIGCONT and SIGTERM to all their process
/// groups, SIGKILL to those left after `grace`.
pub(crate) async fn end_all(agent: &Agent, grace: Duration) {
    let groups = || -> Vec<i32> {
        let jobs = agent.jobs.lock().expect("lock");
        jobs.values()
            .flat_map(|j| j.pid.into_iter().chain(j.task_groups.iter().copied()))
            .collect()
    };
    let first = groups();
    if first.is_empty() {
        return;
    }
    for &g in &first {
        let _ = killpg(Pid::from_raw(g), Signal::SIGCONT);
        let _ = killpg(Pid::from_raw(g), Signal::SIGTERM);
    }
    tokio::time::sleep(grace).await;
    for g in first {
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
    }
}

/// Starts a step's tasks on this node and streams their output and exits to `tx`.
pub(crate) fn tasks(
    agent: Arc<Agent>,
    record: JobRecord,
    order: LaunchTasks,
    tx: Sender<TaskEvent>,
) {
    let owner = match Owner::of(&agent, &record) {
        Ok(o) => o,
        Err(message) => {
            let _ = tx.try_send(TaskEvent::Error { message });
            return;
        }
    };
    let Some(program) = order.argv.first().cloned() else {
        let _ = tx.try_send(TaskEvent::Error {
            message: "no command".into(),
        });
        return;
    };
    let gtids = order
        .tasks
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    for (local, &task) in order.tasks.iter().enumerate() {
        let mut env = order.environment.clone();
        env.retain(|(k, _)| {
            !matches!(
                k.as_str(),
                "SLURM_PROCID" | "SLURM_LOCALID" | "SLURM_NODEID" | "SLURM_GTIDS"
            )
        });
        env.push(("SLURM_PROCID".into(), task.to_string()));
        env.push(("SLURM_LOCALID".into(), local.to_string()));
        env.push(("SLURM_NODEID".into(), order.node_index.to_string()));
        env.push(("SLURM_GTIDS".into(), gtids.clone()));
        env.push(("SLURMD_NODENAME".into(), agent.node.clone()));
        if let Some(g) = order.task_gpus.get(local).filter(|g| !g.is_empty()) {
            let list = g.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
            env.retain(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "CUDA_VISIBLE_DEVICES"
                        | "ROCR_VISIBLE_DEVICES"
                        | "GPU_DEVICE_ORDINAL"
                        | "ZE_AFFINITY_MASK"
                )
            });
            for k in [
                "CUDA_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES",
                "GPU_DEVICE_ORDINAL",
                "ZE_AFFINITY_MASK",
            ] {
                env.push((k.into(), list.clone()));
            }
            env.push(("SLURM_STEP_GPUS".into(), list));
        }
        let mut cmd = owner.command(&program, &order.argv[1..], &env, &order.work_dir);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.blocking_send_or_try(TaskEvent::Output {
                    task,
                    stream: 2,
                    data: format!("slurmstepd: error: execve(): {program}: {e}\n"),
                });
                let _ = tx.blocking_send_or_try(TaskEvent::Exit {
                    task,
                    code: 2,
                    signal: 0,
                });
                continue;
            }
        };
        let pid = child.id() as i32;
        if let Some(j) = agent.jobs.lock().expect("lock").get_mut(&order.job_id) {
            j.task_groups.push(pid);
        }
        let key = format!("{}.task-{pid}", order.job_id);
        leftovers::remember(&agent.jobs_dir(), &key, pid);
        let readers: Vec<std::thread::JoinHandle<()>> = [
            (
                child
                    .stdout
                    .take()
                    .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
                1u8,
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
                2u8,
            ),
        ]
        .into_iter()
        .filter_map(|(pipe, stream)| pipe.map(|p| (p, stream)))
        .map(|(pipe, stream)| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(pipe);
                let mut buf = Vec::new();
                while r
                    .read_until(b'\n', &mut buf)
                    .map(|n| n > 0)
                    .unwrap_or(false)
                {
                    let data = String::from_utf8_lossy(&buf).into_owned();
                    if tx
                        .blocking_send(TaskEvent::Output { task, stream, data })
                        .is_err()
                    {
                        // srun went away; keep draining so the task does not block.
                    }
                    buf.clear();
                }
            })
        })
        .collect();
        let tx = tx.clone();
        let agent = agent.clone();
        let job = order.job_id;
        std::thread::spawn(move || {
            let status = child.wait();
            leftovers::forget(&agent.jobs_dir(), &key);
            for r in readers {
                let _ = r.join();
            }
            if let Some(j) = agent.jobs.lock().expect("lock").get_mut(&job) {
                j.task_groups.retain(|g| *g != pid);
            }
            let (code, signal) = match &status {
                Ok(s) => (s.code().unwrap_or(0), s.signal().unwrap_or(0)),
                Err(_) => (1, 0),
            };
            let _ = tx.blocking_send(TaskEvent::Exit { task, code, signal });
        });
    }
}

trait SendOrTry {
    fn blocking_send_or_try(&self, e: TaskEvent) -> Result<(), ()>;
}

impl SendOrTry for Sender<TaskEvent> {
    /// Sends from either a runtime thread (try) or a plain thread (blocking).
    fn blocking_send_or_try(&self, e: TaskEvent) -> Result<(), ()> {
        if tokio::runtime::Handle::try_current().is_ok() {
            self.try_send(e).map_err(|_| ())
        } else {
            self.blocking_send(e).map_err(|_| ())
        }
    }
}
