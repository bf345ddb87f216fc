"""dask-jobqueue, unmodified, against a running Sluice cluster.

Run by tests/clients/run.sh with the cluster's commands on PATH. Each check prints
`ok` or `FAIL`; the last line is `N passed, M failed`, and the exit status is non-zero
when anything failed.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

from dask.distributed import Client
from dask_jobqueue import SLURMCluster

from checks import check, summary

PATIENCE = 120
LOGS = Path("dask-logs").absolute()


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def queued(ids):
    """Those of `ids` that squeue still shows as pending or running."""
    if not ids:
        return []
    out = run("squeue", "-h", "-o", "%i %T", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING")
    return [line.split()[0] for line in out.splitlines() if line.split()[0] in ids]


def sacct_states(ids):
    args = ["sacct", "-n", "-P", "-X", "-o", "JobID,State"]
    for i in ids:
        args += ["-j", i]
    return dict(line.split("|", 1) for line in run(*args).splitlines() if line)


def wait_until(pred, what):
    deadline = time.time() + PATIENCE
    while not pred():
        if time.time() > deadline:
            raise AssertionError(f"not within {PATIENCE} s: {what}")
        time.sleep(0.5)


# A SLURMRunner program: every task of one `srun` runs it; task 0 becomes the
# scheduler, task 1 the client (this code), the rest workers.
# dask-jobqueue's client task reads the scheduler file as soon as it exists, and fails
# on JSON the scheduler task is still writing; the other tasks would then wait for ever
# (as they would under Slurm). The client task first waits until the file parses.
RUNNER = """
import json, os, time
from pathlib import Path
from dask.distributed import Client
from dask_jobqueue.slurm import SLURMRunner

if os.environ["SLURM_PROCID"] == "1":
    written = Path("scheduler-" + os.environ["SLURM_JOB_ID"] + ".json")
    while True:
        try:
            json.loads(written.read_text())["address"]
            break
        except (OSError, ValueError, KeyError):
            time.sleep(0.1)

with SLURMRunner(scheduler_file="scheduler-{job_id}.json") as runner:
    with Client(runner) as client:
        client.wait_for_workers(runner.n_workers)
        assert client.submit(lambda x: x + 1, 10).result() == 11
        assert client.submit(lambda x: x + 1, 20, workers=2).result() == 21
        nodes = client.run(lambda: os.environ["SLURMD_NODENAME"])
        print("workers", len(nodes), "on", ",".join(sorted(set(nodes.values()))))
        print("Test passed")
"""


def inc(x):
    return x + 1


def where():
    return os.environ.get("SLURM_JOB_ID"), os.environ.get("SLURMD_NODENAME")


def main():
    cluster = SLURMCluster(
        cores=1,
        processes=1,
        memory="512MiB",
        walltime="00:10:00",
        name="dask-worker",
        log_directory=str(LOGS),
        job_extra_directives=["--comment=dask-driver"],
    )
    client = Client(cluster)
    jobs = {}

    def script():
        s = cluster.job_script()
        for line in ("#SBATCH -n 1", "#SBATCH --cpus-per-task=1", "#SBATCH --mem=512M",
                     "#SBATCH -t 00:10:00", "#SBATCH -J dask-worker"):
            assert line in s, f"{line!r} not in job script:\n{s}"

    def scale_up():
        cluster.scale(jobs=6)
        client.wait_for_workers(6, timeout=PATIENCE)
        jobs.update({w.job_id: name for name, w in cluster.workers.items()})
        assert len(jobs) == 6, jobs
        running = sacct_states(list(jobs))
        assert all(s == "RUNNING" for s in running.values()), running
        placed = client.run(where)
        assert sorted(j for j, _ in placed.values()) == sorted(jobs), (placed, jobs)
        nodes = {n for _, n in placed.values()}
        # Six one-CPU workers on three four-CPU nodes: they need at least two nodes.
        assert len(nodes) >= 2, placed

    def compute():
        futures = client.map(inc, range(1000))
        total = client.submit(sum, futures)
        assert total.result(timeout=PATIENCE) == sum(range(1, 1001))
        import dask.bag as db
        b = db.from_sequence(range(10_000), npartitions=12).map(lambda x: x * x).sum()
        assert b.compute() == sum(x * x for x in range(10_000))
        who = client.gather(client.map(lambda i: where(), range(60), pure=False))
        assert len({j for j, _ in who}) >= 2, "the work was not spread over several workers"

    def scale_down():
        cluster.scale(jobs=2)
        wait_until(lambda: len(client.scheduler_info()["workers"]) == 2, "two workers left")
        left = {w.job_id for w in cluster.workers.values()}
        gone = [j for j in jobs if j not in left]
        assert len(gone) == 4, (jobs, left)
        wait_until(lambda: not queued(gone), f"jobs {gone} gone from squeue")
        states = sacct_states(gone)
        assert all(s.startswith("CANCELLED") or s == "COMPLETED" for s in states.values()), states
        assert sorted(queued(list(left))) == sorted(left), "the remaining workers' jobs still run"
        assert client.submit(inc, 41).result(timeout=PATIENCE) == 42

    def close():
        client.close()
        cluster.close()
        ids = list(jobs)
        wait_until(lambda: not queued(ids), f"jobs {ids} gone from squeue")
        states = sacct_states(ids)
        assert all(s.startswith("CANCELLED") or s == "COMPLETED" for s in states.values()), states
        assert len(states) == 6, states

    def runner():
        Path("runner.py").write_text(RUNNER)
        # Outside an allocation: srun creates the job, six tasks on three nodes.
        try:
            o = subprocess.run(
                ["srun", "--mpi=none", "-vv", "-N", "3", "-n", "6", sys.executable, "runner.py"],
                capture_output=True, text=True, timeout=PATIENCE,
            )
        except subprocess.TimeoutExpired as e:
            steps = subprocess.run(["squeue", "-s"], capture_output=True, text=True).stdout
            err = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            raise AssertionError(f"srun still running after {PATIENCE} s\n{steps}\n{err[-3000:]}") from e
        assert o.returncode == 0, (o.returncode, o.stdout, o.stderr[-3000:])
        assert "Test passed" in o.stdout, (o.stdout, o.stderr[-3000:])
        line = next((l for l in o.stdout.splitlines() if l.startswith("workers ")), "")
        words = line.split()
        assert words[:3] == ["workers", "4", "on"] and len(words[3].split(",")) >= 2, o.stdout

    check("job script carries the cluster's options", script)
    check("scale up to six workers on several nodes", scale_up)
    check("a real result computed on the workers", compute)
    check("scale down to two: four jobs ended", scale_down)
    check("close: every job ended", close)
    check("SLURMRunner: one srun of six tasks on three nodes, outside an allocation", runner)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
