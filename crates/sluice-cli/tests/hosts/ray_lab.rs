//! Ray and Dask inside an allocation (issue 22, item 2), with the real Ray and Dask's
//! `distributed` (`harness::ai_python`): on `head01` and `node01`–`node02` of the seeds'
//! lab, `examples/ray/ray-cluster.sbatch` runs a job of 3 tasks on 2 nodes (CPUs 2 and
//! 1 of the nodes' 128, 2 of their 8 GPUs each): Ray's head on node01, a worker on
//! node02, each told exactly the job's CPUs and GPUs there; a task pinned to each Ray
//! node reports its host, so both allocated nodes are seen with the allocation's
//! resources. When the job ends, and when a running one is cancelled, no Ray process is
//! left on any host. `examples/dask/dask-cluster.sbatch` the same with a Dask scheduler
//! and a worker per node. Each reports the time from `sbatch` to its cluster being
//! whole (`--nocapture`).
//!
//! The jobs run as root: the AI lab's python (tests/ai/venv.sh) is built on this
//! machine's, which may live under root's home, out of other users' reach. The
//! environment is mounted on every host at its own path (the hosts' /tmp is their own).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::harness::{ai_python, can_make_hosts, Hosts, Output};
use crate::seeds_lab::{
    here, job_ended, job_state, lay_out, read, start_cluster, wait_for, Daemons, BIN, ETC, WORK,
};

const TEST: &str = "ray_and_dask_run_inside_an_allocation_and_leave_nothing_behind";

/// The compute nodes of the lab (the seeds' `train` partition's first two).
const NODES: [&str; 2] = ["node01", "node02"];

/// Where a lab's shared home sees the AI environment.
const VENV_IN_HOME: &str = "/home/ai-venv";

/// A shared home of the test's own, removed on drop (after the lab's teardown).
struct OwnHome(PathBuf);

impl Drop for OwnHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Brings up hosts `names` with this machine's AI environment `venv` seen on every
/// host at its own path: bound into a shared home of the test's own as the lab comes
/// up (a host's `/tmp`, where it may be, is the host's own), and linked from that path.
fn up_with_venv(names: &[&str], venv: &Path) -> (OwnHome, Hosts) {
    let home = OwnHome(std::env::temp_dir().join(format!("sluice-ray-lab-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&home.0);
    std::fs::create_dir_all(home.0.join("ai-venv")).unwrap();
    let home_arg = home.0.display().to_string();
    let bind = format!("{}:{VENV_IN_HOME}", venv.display());
    let h = Hosts::up(names, &["--home", &home_arg, "--bind", &bind]);
    let venv = venv.display();
    for host in h.names() {
        h.sh_ok(
            host,
            &format!(
                "[ -e {venv}/bin ] || {{ mkdir -p \"$(dirname {venv})\" && ln -sfn {VENV_IN_HOME} {venv}; }}"
            ),
        );
    }
    (home, h)
}

/// Runs `script` on `host` as root in the lab's working directory, with the lab's
/// commands and the AI environment on `PATH`.
fn lab_sh(h: &Hosts, host: &str, python: &Path, script: &str) -> Output {
    let venv_bin = python.parent().expect("python's directory").display();
    let py = python.display();
    h.sh(
        host,
        &format!(
            "cd {WORK} && export PATH={BIN}:{venv_bin}:/usr/local/bin:/usr/bin:/bin \
             SLURM_CONF={ETC}/slurm.conf XDG_STATE_HOME=/nonexistent RAY_PYTHON={py} \
             DASK_PYTHON={py} RAY_OBJECT_STORE_MB=80 && {script}"
        ),
    )
}

/// Whether a command line is one of Ray's or Dask's processes (Ray's workers rename
/// themselves `ray::...`).
fn is_ai_process(cmdline: &str) -> bool {
    [
        "site-packages/ray/",
        "ray::",
        "ray.scripts",
        "raylet",
        "gcs_server",
        "distributed.cli",
        "dask",
    ]
    .iter()
    .any(|m| cmdline.contains(m))
}

/// The Ray and Dask processes on `host`: `pid cmdline` each.
fn ai_processes(h: &Hosts, host: &str) -> Vec<String> {
    h.processes(host)
        .into_iter()
        .filter_map(|pid| {
            let c = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            is_ai_process(&c).then(|| format!("{pid} {}", c.trim_end()))
        })
        .collect()
}

/// The Ray and Dask processes on every host of `h`.
fn ai_processes_anywhere(h: &Hosts) -> Vec<String> {
    h.names()
        .into_iter()
        .flat_map(|host| {
            ai_processes(h, host)
                .into_iter()
                .map(move |p| format!("{host}: {p}"))
        })
        .collect()
}

/// Waits up to `limit` for no Ray or Dask process to be left on any host; panics with
/// what is left.
fn wait_none_left(h: &Hosts, limit: Duration, after: &str) {
    let start = std::time::Instant::now();
    loop {
        let left = ai_processes_anywhere(h);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{after}, left behind:\n{}",
            left.join("\n")
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Submits `sbatch ARGS` from `head01`; the job's id and when it was submitted.
///
/// Each job here expects an empty cluster (its layout on the nodes is asserted): the
/// previous job must have left the queue first, not only its processes ended, since a
/// node still completing it has less room and would change which node gets the job's
/// extra task.
fn submit(h: &Hosts, python: &Path, args: &str) -> (u64, f64) {
    wait_for(Duration::from_secs(60), "an empty queue", || {
        let o = lab_sh(h, "head01", python, "squeue -h -o '%i %t'");
        (o.code == 0 && o.stdout.trim().is_empty()).then_some(())
    });
    let t0 = now();
    let o = lab_sh(h, "head01", python, &format!("sbatch --parsable {args}"));
    assert_eq!(o.code, 0, "sbatch {args}: {}", o.stderr);
    (o.stdout.trim().parse().expect("a job id"), t0)
}

/// Waits for `out` of `job` to say the cluster is whole (`... joined at EPOCH`); the
/// seconds from `submitted` to then. Panics with the output if the job ends first.
fn joined(h: &Hosts, job: u64, out: &str, submitted: f64) -> f64 {
    let path = here(h, out);
    let start = std::time::Instant::now();
    loop {
        let text = read(&path);
        if let Some(at) = text.lines().find_map(|l| {
            l.split_once(" joined at ")
                .and_then(|(_, t)| t.trim().parse::<f64>().ok())
        }) {
            return at - submitted;
        }
        let state = job_state(h, job);
        assert!(
            start.elapsed() < Duration::from_secs(240)
                && (state.is_empty()
                    || state.starts_with("PENDING")
                    || state.starts_with("RUNNING")),
            "job {job} ({state}) did not say its cluster was whole; output:\n{text}\n\
             node01's agent:\n{}",
            read(&h.spool("node01").join("slurmd/slurmd.log"))
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The job's output, once it has ended in a state (`State|ExitCode`) that starts with
/// `state`.
fn ended_as(h: &Hosts, job: u64, out: &str, state: &str) -> String {
    let s = job_ended(h, job, Duration::from_secs(240));
    let text = read(&here(h, out));
    assert!(s.starts_with(state), "job {job} ended {s}; output:\n{text}");
    text
}

/// The lines of `text` that start with `prefix`.
fn lines_with(text: &str, prefix: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

#[test]
fn ray_and_dask_run_inside_an_allocation_and_leave_nothing_behind() {
    if !can_make_hosts(TEST) {
        return;
    }
    let Some(python) = ai_python(TEST) else {
        return;
    };
    let venv = python.parent().and_then(Path::parent).expect("a venv");
    let (_home, h) = up_with_venv(&["head01", "node01", "node02"], venv);
    lay_out(&h, "KillWait=5\n");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for (dir, files) in [
        ("ray", ["ray-cluster.sbatch", "hostnames.py"]),
        ("dask", ["dask-cluster.sbatch", "hostnames.py"]),
    ] {
        let to = here(&h, WORK).join(dir);
        std::fs::create_dir_all(&to).unwrap();
        for f in files {
            std::fs::copy(examples.join(dir).join(f), to.join(f)).unwrap();
        }
    }
    let daemons = Daemons(&h);
    start_cluster(&h, &NODES);
    // The job's shape: 3 tasks on 2 nodes (2 CPUs on the first, 1 on the second, by
    // block distribution), 2 GPUs on each; the nodes have 128 CPUs and 8 GPUs.
    let shape = "-p train -N2 -n3 --gres=gpu:2 -t 10";

    // Ray: both nodes seen by tasks that ran there, each with the job's share.
    let out = format!("{WORK}/ray-done.out");
    let (job, t0) = submit(
        &h,
        &python,
        &format!("{shape} -o {out} ray/ray-cluster.sbatch ray/hostnames.py"),
    );
    let took = joined(&h, job, &out, t0);
    let text = ended_as(&h, job, &out, "COMPLETED|0:0");
    assert_eq!(
        lines_with(&text, "task ran on"),
        [
            "task ran on node01: CPU=2 GPU=2",
            "task ran on node02: CPU=1 GPU=2"
        ],
        "{text}"
    );
    assert!(text.contains("cluster: CPU=3 GPU=4 nodes=2\n"), "{text}");
    let ray_nodes = lines_with(&text, "ray-cluster: node ");
    assert_eq!(
        ray_nodes,
        [
            format!(
                "ray-cluster: node node01 {} CPU=2 GPU=2",
                h.address("node01")
            ),
            format!(
                "ray-cluster: node node02 {} CPU=1 GPU=2",
                h.address("node02")
            ),
        ],
        "{text}"
    );
    eprintln!("ray: sbatch to all 2 Ray nodes joined: {took:.2} s");
    wait_none_left(&h, Duration::from_secs(10), "after Ray's job ended");

    // scancel of a running Ray job: its Ray processes go with it, on every host.
    let out = format!("{WORK}/ray-cancel.out");
    std::fs::write(
        here(&h, WORK).join("ray/wait.py"),
        "import ray, time\nray.init()\nprint('driver running', flush=True)\ntime.sleep(600)\n",
    )
    .unwrap();
    let (job, t0) = submit(
        &h,
        &python,
        &format!("{shape} -o {out} ray/ray-cluster.sbatch ray/wait.py"),
    );
    let took2 = joined(&h, job, &out, t0);
    eprintln!("ray: sbatch to all 2 Ray nodes joined: {took2:.2} s");
    wait_for(Duration::from_secs(60), "the driver", || {
        read(&here(&h, &out))
            .contains("driver running")
            .then_some(())
    });
    for node in NODES {
        let ray = ai_processes(&h, node);
        assert!(
            ray.iter().any(|p| p.contains("raylet")),
            "no raylet on {node}: {ray:?}"
        );
    }
    let o = lab_sh(&h, "head01", &python, &format!("scancel {job}"));
    assert_eq!(o.code, 0, "{}", o.stderr);
    ended_as(&h, job, &out, "CANCELLED");
    wait_none_left(&h, Duration::from_secs(15), "after Ray's job was cancelled");

    // Dask: a worker on each node with the job's CPUs as threads and its GPUs.
    let out = format!("{WORK}/dask-done.out");
    let (job, t0) = submit(
        &h,
        &python,
        &format!("{shape} -o {out} dask/dask-cluster.sbatch dask/hostnames.py"),
    );
    let took = joined(&h, job, &out, t0);
    let text = ended_as(&h, job, &out, "COMPLETED|0:0");
    assert_eq!(
        lines_with(&text, "task ran on"),
        [
            "task ran on node01: threads=2 GPU=2",
            "task ran on node02: threads=1 GPU=2"
        ],
        "{text}"
    );
    eprintln!("dask: sbatch to all 2 Dask workers joined: {took:.2} s");
    wait_none_left(&h, Duration::from_secs(10), "after Dask's job ended");

    // scancel of a running Dask job.
    let out = format!("{WORK}/dask-cancel.out");
    std::fs::write(
        here(&h, WORK).join("dask/wait.py"),
        "import time\nfrom distributed import Client\nClient()\nprint('driver running', flush=True)\ntime.sleep(600)\n",
    )
    .unwrap();
    let (job, t0) = submit(
        &h,
        &python,
        &format!("{shape} -o {out} dask/dask-cluster.sbatch dask/wait.py"),
    );
    joined(&h, job, &out, t0);
    wait_for(Duration::from_secs(60), "the driver", || {
        read(&here(&h, &out))
            .contains("driver running")
            .then_some(())
    });
    for node in NODES {
        let dask = ai_processes(&h, node);
        assert!(
            dask.iter().any(|p| p.contains("dask_worker")),
            "no Dask worker on {node}: {dask:?}"
        );
    }
    let o = lab_sh(&h, "head01", &python, &format!("scancel {job}"));
    assert_eq!(o.code, 0, "{}", o.stderr);
    ended_as(&h, job, &out, "CANCELLED");
    wait_none_left(
        &h,
        Duration::from_secs(15),
        "after Dask's job was cancelled",
    );

    drop(daemons);
    h.down().unwrap();
}
