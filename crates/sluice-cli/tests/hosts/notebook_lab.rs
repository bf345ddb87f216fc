//! Notebooks with a hard limit (issue 22, item 3), with the real `jupyter-server` and
//! `ipykernel` of the AI lab's environment (`tests/ai`): on a lab of `head01`
//! (`slurmctld`), `node01` (8 GPUs, the seeds' `train` partition), `node04` (where
//! users submit) and `login01` (no daemon at all: the host a user browses from), a
//! notebook asked for with `salloc --gres=gpu:1 --time=1 srun ...` and one with
//! `sbatch examples/jupyter/notebook.sbatch` answer from `login01` over HTTP, start
//! kernels through their REST API, hold one GPU each (as accounting shows), and end at
//! their one-minute limit: `TIMEOUT`, server and kernel gone from `node01`, and a job
//! asking for all eight GPUs, which waited, runs. And JupyterHub's real
//! `batchspawner.SlurmSpawner` (`tests/ai/slurmspawner.py`) starts, polls and stops a
//! notebook server through Sluice's `sbatch`, `squeue` and `scancel`.
//!
//! The jobs are root's: the environment's Python is this machine's root's (pyenv, under
//! `/root`, which other users cannot enter), and the hosts' own `/tmp` hides it, so it
//! is bound on every host at [`VENV`].

use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{ai_python, can_make_hosts, Hosts, Output};
use crate::seeds_lab::{
    as_root, here, job_ended, lay_out, read, start_cluster, wait_for, Daemons, ETC, USER_PATH,
};

/// Where the AI lab's virtual environment is on the lab's hosts.
const VENV: &str = "/mnt";
/// Root's directory for these jobs (its `HOME`: Jupyter's files go there, not to
/// this machine's `/root`).
const JOBS: &str = "/home/lab/root";
/// The user's copy of the example script.
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/jupyter/notebook.sbatch"
);
/// What runs code in a kernel from the login host.
const KERNEL_RUN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/ai/kernel_run.py");
/// The batchspawner driver.
const SPAWNER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/ai/slurmspawner.py"
);

/// The lab of `hosts`, with the AI environment bound at [`VENV`] and the seeds'
/// configuration (`KillWait=2`); None, after saying why, where it cannot be made.
fn lab(test: &str, hosts: &[&str]) -> Option<Hosts> {
    let python = ai_python(test)?;
    if !can_make_hosts(test) {
        return None;
    }
    let venv = python
        .parent()
        .and_then(Path::parent)
        .expect("the environment's python is in its bin/");
    let h = Hosts::up(hosts, &["--bind", &format!("{}:{VENV}", venv.display())]);
    lay_out(&h, "KillWait=2\n");
    std::fs::create_dir_all(here(&h, JOBS)).unwrap();
    Some(h)
}

/// A root shell on `host` in [`JOBS`], with the environment's Python and the lab's
/// commands on `PATH`.
fn root_sh(h: &Hosts, host: &str, script: &str) -> Output {
    h.sh(host, &format!("cd {JOBS} && {} && {script}", env_line()))
}

fn env_line() -> String {
    format!(
        "export HOME={JOBS} PATH={VENV}/bin:{USER_PATH} SLURM_CONF={ETC}/slurm.conf \
         XDG_STATE_HOME=/nonexistent"
    )
}

/// `curl` from `login01`: the body, or None where the server does not answer (yet).
fn get(h: &Hosts, url: &str) -> Option<String> {
    let o = h.run("login01", &["curl", "-sf", "--max-time", "2", url]);
    (o.code == 0).then_some(o.stdout)
}

/// The notebook URL the example script printed in job `job`'s output:
/// `http://HOST:PORT/?token=TOKEN`.
fn printed_url(h: &Hosts, job: u64) -> String {
    let out = here(h, JOBS).join(format!("notebook-{job}.out"));
    wait_for(Duration::from_secs(30), "the notebook's URL", || {
        read(&out)
            .lines()
            .find_map(|l| l.strip_prefix("From the login host: "))
            .map(str::to_string)
    })
}

/// Waits for the server at `url` (`http://HOST:PORT/?token=T`) to answer
/// `/api/status` from `login01`.
fn answering(h: &Hosts, url: &str) {
    let status = url.replace("/?token=", "/api/status?token=");
    wait_for(Duration::from_secs(60), "the server's answer", || {
        get(h, &status).filter(|b| b.contains("\"started\""))
    });
}

/// The processes on `host` whose command line has every one of `words`.
fn processes_with(h: &Hosts, host: &str, words: &[&str]) -> Vec<i32> {
    h.processes(host)
        .into_iter()
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            words.iter().all(|w| cmd.contains(w))
        })
        .collect()
}

/// A process's parent.
fn parent(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // `PID (COMM) STATE PPID ...`: COMM may hold spaces, not `)`.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(1).unwrap().parse().unwrap()
}

/// A variable of a process's environment.
fn environ(pid: i32, name: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0)
        .map(|kv| String::from_utf8_lossy(kv).into_owned())
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")).map(str::to_string))
}

/// Starts a kernel through the REST API of the server at `base` (`http://HOST:PORT`)
/// from `login01` and runs code in it over its websocket, as a browser does: the
/// kernel's host, pid and `CUDA_VISIBLE_DEVICES`, and its id.
fn run_kernel(h: &Hosts, base: &str, token: &str) -> (String, i32, String, String) {
    let code = "import os, socket; \
                print(socket.gethostname(), os.getpid(), os.environ.get('CUDA_VISIBLE_DEVICES'))";
    let o = h.run(
        "login01",
        &[&format!("{VENV}/bin/python"), KERNEL_RUN, base, token, code],
    );
    assert_eq!(o.code, 0, "a kernel at {base}: {}{}", o.stdout, o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    let [said, id] = lines[..] else {
        panic!("the kernel said {:?}", o.stdout)
    };
    let said: Vec<&str> = said.split(' ').collect();
    let [host, pid, gpus] = said[..] else {
        panic!("the kernel said {said:?}")
    };
    (
        host.to_string(),
        pid.parse().expect("a pid"),
        gpus.to_string(),
        id.to_string(),
    )
}

/// Field `field` of `sacct -X` for `job`.
fn sacct(h: &Hosts, job: u64, field: &str) -> String {
    let o = as_root(
        h,
        "head01",
        "sacct",
        &["-n", "-X", "-P", "-o", field, "-j", &job.to_string()],
    );
    o.stdout.trim().to_string()
}

/// Polls `check` every 50 ms, up to a minute, until it gives Some (for timings); None
/// if it never does.
fn soon<T>(mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        if start.elapsed() > Duration::from_secs(60) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn notebooks_answer_from_the_login_host_hold_a_gpu_and_end_at_their_time_limit() {
    let test = "notebooks_answer_from_the_login_host_hold_a_gpu_and_end_at_their_time_limit";
    let Some(h) = lab(test, &["head01", "node01", "node04", "login01"]) else {
        return;
    };
    let daemons = Daemons(&h);
    start_cluster(&h, &["node01", "node04"]);
    let sbatch = |args: &str| -> u64 {
        let o = root_sh(
            &h,
            "node04",
            &format!("NOTEBOOK_ARGS=--allow-root sbatch --parsable -p train -w node01 --mem=1G {args} {SCRIPT}"),
        );
        assert_eq!(o.code, 0, "sbatch: {}", o.stderr);
        o.stdout.trim().parse().expect("a job id")
    };

    // Time to URL: from sbatch to the server answering on the URL its output names,
    // from the login host (the time a user waits), three times; and to the URL printed
    // (the job's script running: what the cluster takes, the rest is Jupyter's).
    let (mut printed, mut answered) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let submitted = Instant::now();
        let job = sbatch("");
        let out = here(&h, JOBS).join(format!("notebook-{job}.out"));
        let url = soon(|| {
            read(&out)
                .lines()
                .find_map(|l| l.strip_prefix("From the login host: "))
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no URL from job {job}: {}", read(&out)));
        printed.push(submitted.elapsed());
        let status = url.replace("/?token=", "/api/status?token=");
        soon(|| get(&h, &status).filter(|b| b.contains("\"started\"")))
            .unwrap_or_else(|| panic!("no answer from job {job} at {url}: {}", read(&out)));
        answered.push(submitted.elapsed());
        assert_eq!(root_sh(&h, "node04", &format!("scancel {job}")).code, 0);
        assert_eq!(
            job_ended(&h, job, Duration::from_secs(30)),
            "CANCELLED by 0|0:0"
        );
    }
    let secs = |v: &[Duration]| -> Vec<String> {
        v.iter()
            .map(|d| format!("{:.2}", d.as_secs_f64()))
            .collect()
    };
    eprintln!(
        "notebook time-to-URL: median {:.2} s {:?}; URL printed after {:.2} s {:?}",
        median(answered.clone()).as_secs_f64(),
        secs(&answered),
        median(printed.clone()).as_secs_f64(),
        secs(&printed),
    );

    // Two notebooks with a one-minute limit and a GPU each: one from salloc (its
    // server a step run by srun), one from the example batch script.
    let token = "salloc-token-0123456789";
    let salloc_cmd = format!(
        "cd {JOBS} && {} && exec salloc -p train -w node01 --gres=gpu:1 --mem=1G --time=1 \
         srun python -m jupyter_server --no-browser --allow-root --ip=0.0.0.0 --port=8801 \
         --ServerApp.port_retries=0 --IdentityProvider.token={token} \
         > salloc.out 2> salloc.err",
        env_line()
    );
    let mut salloc = h
        .command("node04", &["bash", "-c", &salloc_cmd])
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let batch = sbatch("--time=1");
    let batch_url = printed_url(&h, batch);
    let salloc_url = format!("http://node01:8801/?token={token}");
    answering(&h, &salloc_url);
    answering(&h, &batch_url);
    let salloc_job: u64 = read(&here(&h, JOBS).join("salloc.err"))
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .expect("salloc's grant")
        .parse()
        .unwrap();

    // A kernel in each, started through the REST API from the login host, runs code
    // on node01 with the job's one GPU; server and kernel are processes there.
    let (batch_base, batch_token) = batch_url.split_once("/?token=").unwrap();
    let mut pids = Vec::new();
    for (job, base, token) in [
        (salloc_job, "http://node01:8801", token),
        (batch, batch_base, batch_token),
    ] {
        let (host, kernel, gpus, id) = run_kernel(&h, base, token);
        assert_eq!(host, "node01");
        assert!(
            gpus.len() == 1 && gpus.chars().all(|c| c.is_ascii_digit()),
            "job {job}'s kernel has CUDA_VISIBLE_DEVICES={gpus}"
        );
        assert_eq!(
            processes_with(&h, "node01", &["ipykernel_launcher", &id]),
            vec![kernel],
            "job {job}'s kernel on node01"
        );
        // Its parent is the job's server, on the port the job was given.
        let server = parent(kernel);
        let port = format!("--port={}", base.rsplit(':').next().unwrap());
        assert!(
            processes_with(&h, "node01", &["jupyter_server", &port]).contains(&server),
            "job {job}'s kernel's parent {server}"
        );
        assert_eq!(
            environ(server, "CUDA_VISIBLE_DEVICES").as_deref(),
            Some(gpus.as_str())
        );
        pids.extend([server, kernel]);
        // Accounting holds the GPU.
        assert_eq!(
            sacct(&h, job, "State,AllocTRES"),
            "RUNNING|billing=1,cpu=1,gres/gpu=1,mem=1G,node=1"
        );
        let show = as_root(&h, "head01", "scontrol", &["show", "job", &job.to_string()]);
        assert!(
            show.stdout
                .contains("TRES=cpu=1,mem=1G,node=1,billing=1,gres/gpu=1"),
            "{}",
            show.stdout
        );
    }
    // All eight GPUs of node01 for another job: it waits for both notebooks' GPUs.
    let o = root_sh(
        &h,
        "node04",
        "sbatch --parsable -p train -w node01 --gres=gpu:8 --mem=1G -t 1 -o gpus-%j.out \
         --wrap 'echo $CUDA_VISIBLE_DEVICES'",
    );
    let all_gpus: u64 = o.stdout.trim().parse().expect("a job id");
    std::thread::sleep(Duration::from_secs(2));
    let o = as_root(
        &h,
        "head01",
        "squeue",
        &["-h", "-j", &all_gpus.to_string(), "-o", "%T %r"],
    );
    assert_eq!(o.stdout, "PENDING Resources\n");

    // At the limit: TIMEOUT, after a minute of running.
    for job in [salloc_job, batch] {
        assert_eq!(job_ended(&h, job, Duration::from_secs(90)), "TIMEOUT|0:0");
        let elapsed: u64 = sacct(&h, job, "ElapsedRaw").parse().unwrap();
        assert!((60..=62).contains(&elapsed), "job {job} ran {elapsed} s");
    }
    // Servers and kernels gone from node01: SIGTERM, SIGKILL after KillWait.
    wait_for(
        Duration::from_secs(15),
        "the notebooks' processes gone",
        || {
            let left: Vec<i32> = pids
                .iter()
                .copied()
                .filter(|p| Path::new(&format!("/proc/{p}")).exists())
                .collect();
            left.is_empty().then_some(())
        },
    );
    assert_eq!(
        processes_with(&h, "node01", &["jupyter"]),
        Vec::<i32>::new()
    );
    assert_eq!(
        processes_with(&h, "node01", &["ipykernel"]),
        Vec::<i32>::new()
    );
    // salloc ended too, telling its user.
    let code = wait_for(Duration::from_secs(15), "salloc's end", || {
        salloc.try_wait().unwrap().map(|s| s.code())
    });
    let said = read(&here(&h, JOBS).join("salloc.err"));
    assert!(code.is_some(), "salloc: {said}");
    assert!(
        said.contains(&format!(
            "salloc: Job {salloc_job} has exceeded its time limit and its allocation has been \
             revoked.\n"
        )),
        "{said}"
    );
    // Both servers had SIGTERM first (they shut their kernels down), and the batch
    // job's output says why it ended, as slurmstepd writes it.
    let out = read(&here(&h, JOBS).join(format!("notebook-{batch}.out")));
    for (who, text) in [("salloc", &said), ("sbatch", &out)] {
        assert!(
            text.contains("received signal 15, stopping"),
            "{who}'s server: {text}"
        );
    }
    assert!(
        out.contains(&format!(": error: *** JOB {batch} ON node01 CANCELLED AT "))
            && out.contains(" DUE TO TIME LIMIT ***\n"),
        "{out}"
    );
    // The GPUs are free again: the job that wanted them all has had them.
    assert_eq!(
        job_ended(&h, all_gpus, Duration::from_secs(30)),
        "COMPLETED|0:0"
    );
    assert_eq!(
        read(&here(&h, JOBS).join(format!("gpus-{all_gpus}.out"))),
        "0,1,2,3,4,5,6,7\n"
    );

    drop(daemons);
    h.down().unwrap();
}

#[test]
fn batchspawner_starts_polls_and_stops_a_notebook_through_sluices_commands() {
    let test = "batchspawner_starts_polls_and_stops_a_notebook_through_sluices_commands";
    let Some(h) = lab(test, &["head01", "node01", "node04"]) else {
        return;
    };
    let daemons = Daemons(&h);
    start_cluster(&h, &["node01", "node04"]);

    // node01's eight GPUs held by a job that ends once the spawner's job has waited
    // (and batchspawner has seen it pending) for a second.
    let o = root_sh(
        &h,
        "node04",
        "sbatch --parsable -p train -w node01 --gres=gpu:8 --mem=1G -t 1 -o /dev/null \
         --wrap 'until squeue -h -n spawner-jupyterhub -t PD -o %i | grep -q .; do sleep 0.2; \
         done; sleep 5'",
    );
    let blocker: u64 = o.stdout.trim().parse().expect("a job id");
    wait_for(Duration::from_secs(30), "the blocker running", || {
        (sacct(&h, blocker, "State") == "RUNNING").then_some(())
    });
    // The Hub on node04 (a host users submit from), its API on node04's address.
    let hub = h.address("node04").to_string();
    let o = root_sh(
        &h,
        "node04",
        &format!(
            "python {SPAWNER} {hub} {JOBS}/hub train '--mem=1G --nodelist=node01' --allow-root"
        ),
    );
    let logs: String = std::fs::read_dir(here(&h, JOBS).join("hub"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| read(&e.path()))
        .collect();
    assert_eq!(o.code, 0, "{}\n{}\njob: {logs}", o.stdout, o.stderr);
    let events: Vec<serde_json::Value> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    let event = |name: &str| {
        events
            .iter()
            .find(|e| e["event"] == name)
            .unwrap_or_else(|| panic!("no {name} in {events:?}"))
            .clone()
    };
    let job: u64 = event("submitted")["job_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // Running on node01, as `squeue -h -j ID -o '%T %B'` said; the server answered
    // there on the port it told the Hub.
    let started = event("started");
    assert_eq!(
        (&started["ip"], &started["status"]),
        (
            &serde_json::json!("node01"),
            &serde_json::json!("RUNNING node01")
        )
    );
    assert!(started["port"].as_u64().unwrap() > 0);
    // What it read from squeue while it waited: pending with no host yet, then running.
    assert_eq!(
        started["seen"],
        serde_json::json!(["PENDING n/a", "RUNNING node01"])
    );
    assert_eq!(
        job_ended(&h, blocker, Duration::from_secs(10)),
        "COMPLETED|0:0"
    );
    assert_eq!(
        event("answered")["url"],
        format!("http://node01:{}/api/status", started["port"])
    );
    eprintln!(
        "batchspawner time-to-URL: {} s",
        event("answered")["seconds"]
    );
    // poll(): still running (None); after stop(), gone (1), the job cancelled.
    let poll = event("poll");
    assert_eq!(
        (&poll["result"], &poll["status"]),
        (
            &serde_json::Value::Null,
            &serde_json::json!("RUNNING node01")
        )
    );
    let stopped = event("stopped");
    assert_eq!(stopped["result"], 1, "{stopped}");
    assert_eq!(
        job_ended(&h, job, Duration::from_secs(10)),
        "CANCELLED by 0|0:0"
    );
    wait_for(Duration::from_secs(15), "the server gone", || {
        processes_with(&h, "node01", &["jupyter"])
            .is_empty()
            .then_some(())
    });
    // The spawner's batch script, with its options, ran as Slurm runs it.
    let log = read(&here(&h, JOBS).join(format!("hub/jupyterhub_slurmspawner_{job}.log")));
    assert!(log.contains("Jupyter Server"), "{log}");

    drop(daemons);
    h.down().unwrap();
}
