"""submitit, unmodified, against a running Sluice cluster.

Run by tests/clients/run.sh with the cluster's commands on PATH. Each check prints
`ok` or `FAIL`; the last line is `N passed, M failed`, and the exit status is non-zero
when anything failed.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import submitit

from checks import check, summary

FOLDER = Path(os.environ.get("SUBMITIT_DRIVER_FOLDER", "submitit-logs")).absolute() / "%j"
PATIENCE = 120  # seconds a job may take to reach a state it should reach in a few


def executor(**params):
    ex = submitit.AutoExecutor(folder=FOLDER, cluster="slurm")
    ex.update_parameters(timeout_min=5, mem_gb=0.25, cpus_per_task=1, slurm_signal_delay_s=30)
    ex.update_parameters(**params)
    return ex


def state(job):
    """The job's state as submitit reads it (sacct, forced)."""
    return job.get_info(mode="force").get("State", "UNKNOWN")


def wait_state(job, pred, what):
    deadline = time.time() + PATIENCE
    s = state(job)
    while not pred(s):
        if time.time() > deadline:
            raise AssertionError(f"job {job.job_id}: state {s!r} after {PATIENCE} s, expected {what}")
        time.sleep(0.5)
        s = state(job)
    return s


def wait_file(path, what):
    deadline = time.time() + PATIENCE
    while not path.exists():
        if time.time() > deadline:
            raise AssertionError(f"{what}: {path} never appeared")
        time.sleep(0.2)


def sacct_rows(job_id):
    out = subprocess.run(
        ["sacct", "-n", "-P", "-X", "-o", "JobID,State,ExitCode", "-j", job_id],
        check=True, capture_output=True, text=True,
    ).stdout
    return [line.split("|") for line in out.splitlines() if line]


# --- the functions the jobs run (pickled by value: this file is __main__) ---


def add(a, b):
    return a + b


def square(x):
    env = submitit.JobEnvironment()
    return x * x, env.job_id, os.environ.get("SLURM_ARRAY_TASK_ID")


def rank():
    env = submitit.JobEnvironment()
    return {
        "global_rank": env.global_rank,
        "local_rank": env.local_rank,
        "node": env.node,
        "num_tasks": env.num_tasks,
        "num_nodes": env.num_nodes,
        "nodename": os.environ.get("SLURMD_NODENAME"),
        "hostnames": list(env.hostnames),
    }


def fail():
    raise ValueError("this job fails on purpose")


def sleep_then(marker, seconds):
    Path(marker).touch()
    time.sleep(seconds)
    return "not cancelled"


class Counter(submitit.helpers.Checkpointable):
    """Counts to `target`, one step every `step_s` seconds, resuming from a checkpoint
    after each requeue. Returns the count and how many times it was started."""

    def __init__(self, target, step_s, marker):
        self.target = target
        self.step_s = step_s
        self.marker = marker
        self.count = 0
        self.starts = 0

    def __call__(self):
        self.starts += 1
        Path(self.marker).write_text(str(self.starts))
        while self.count < self.target:
            time.sleep(self.step_s)
            self.count += 1
        return {
            "count": self.count,
            "starts": self.starts,
            "restart_count": os.environ.get("SLURM_RESTART_COUNT"),
            "job_id": os.environ.get("SLURM_JOB_ID"),
        }


# --- the checks ---


def main():
    @check("one function job and its result")
    def _():
        job = executor(name="add").submit(add, 2, 3)
        assert job.result() == 5, job.result()
        assert wait_state(job, lambda s: s != "RUNNING", "an end") == "COMPLETED", state(job)

    @check("map_array: one array job, one result per item")
    def _():
        items = list(range(6))
        jobs = executor(name="squares", slurm_array_parallelism=4).map_array(square, items)
        base = {j.job_id.split("_")[0] for j in jobs}
        assert len(base) == 1, f"one array job expected, got ids {[j.job_id for j in jobs]}"
        results = [j.result() for j in jobs]
        assert [r[0] for r in results] == [x * x for x in items], results
        assert [r[1] for r in results] == [j.job_id for j in jobs], results
        assert [r[2] for r in results] == [str(i) for i in items], results
        for j in jobs:
            assert wait_state(j, lambda s: s != "RUNNING", "an end") == "COMPLETED", (j.job_id, state(j))

    @check("multi-task job on two nodes: every task's rank")
    def _():
        job = executor(name="ranks", nodes=2, tasks_per_node=2).submit(rank)
        results = job.results()
        assert len(results) == 4, results
        assert [r["global_rank"] for r in results] == [0, 1, 2, 3], results
        assert all(r["num_tasks"] == 4 and r["num_nodes"] == 2 for r in results), results
        assert sorted({r["node"] for r in results}) == [0, 1], results
        assert sorted(r["local_rank"] for r in results) == [0, 0, 1, 1], results
        assert len({r["nodename"] for r in results}) == 2, results
        assert all(len(r["hostnames"]) == 2 for r in results), results
        assert state(job) in ("COMPLETED", "RUNNING", "COMPLETING"), state(job)

    @check("an exception is propagated as a failed job")
    def _():
        job = executor(name="fails").submit(fail)
        err = job.exception()
        assert isinstance(err, submitit.core.utils.FailedJobError), repr(err)
        assert "this job fails on purpose" in str(err), str(err)
        try:
            job.result()
        except submitit.core.utils.FailedJobError:
            pass
        else:
            raise AssertionError("result() did not raise")
        assert wait_state(job, lambda s: s not in ("RUNNING", "COMPLETING"), "an end") == "FAILED", state(job)

    @check("cancel of a running job")
    def _():
        marker = FOLDER.parent / "cancel-started"
        job = executor(name="cancel").submit(sleep_then, str(marker), 300)
        wait_file(marker, "the job to start")
        job.cancel()
        s = wait_state(job, lambda s: s not in ("RUNNING", "COMPLETING", "PENDING"), "CANCELLED")
        assert s.startswith("CANCELLED"), s
        assert job.done(force_check=True), state(job)

    @check("checkpointable job: signalled before its time limit, requeued, completed under the same id")
    def _():
        marker = FOLDER.parent / "timeout-started"
        # One minute, USR2 40 s before the end: about 20 s per run; the work takes 30 s.
        ex = executor(name="timeout", timeout_min=1, slurm_signal_delay_s=40)
        job = ex.submit(Counter(target=30, step_s=1, marker=str(marker)))
        res = job.result()
        assert res["count"] == 30, res
        assert res["starts"] >= 2, res
        assert res["job_id"] == job.job_id, (res, job.job_id)
        assert res["restart_count"] is not None and int(res["restart_count"]) >= 1, res
        assert wait_state(job, lambda s: s != "RUNNING", "an end") == "COMPLETED", state(job)
        assert [r[0] for r in sacct_rows(job.job_id)] == [job.job_id], sacct_rows(job.job_id)

    @check("preemption: SIGTERM then USR2 through scancel --signal, requeued, completed")
    def _():
        marker = FOLDER.parent / "preempt-started"
        job = executor(name="preempt", timeout_min=10).submit(Counter(target=15, step_s=1, marker=str(marker)))
        wait_file(marker, "the job to start")
        time.sleep(3)
        job._interrupt()  # scancel ID --signal SIGTERM; scancel ID --signal USR2
        res = job.result()
        assert res["count"] == 15, res
        assert res["starts"] == 2, res
        assert res["job_id"] == job.job_id, (res, job.job_id)
        assert res["restart_count"] == "1", res
        assert wait_state(job, lambda s: s != "RUNNING", "an end") == "COMPLETED", state(job)

    return summary()


if __name__ == "__main__":
    sys.exit(main())
