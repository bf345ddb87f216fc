"""simple-slurm's queue and cancel wrappers, unmodified, against a running Sluice
cluster (its own unittest suite, run separately by run.sh, covers sbatch and srun).

Each check prints `ok` or `FAIL`; the last line is `N passed, M failed`, and the exit
status is non-zero when anything failed.
"""

import subprocess
import sys
import time

from simple_slurm import Slurm

from checks import check, summary

PATIENCE = 60
def sacct_state(job_id):
    return subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "State", "-j", str(job_id)],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def wait_ended(job_id):
    deadline = time.time() + PATIENCE
    while True:
        s = sacct_state(job_id)
        if s and s not in ("PENDING", "RUNNING", "COMPLETING"):
            return s
        if time.time() > deadline:
            raise AssertionError(f"job {job_id} still {s!r} after {PATIENCE} s")
        time.sleep(0.3)


def main():
    jobs = {}

    def submit():
        one = Slurm(job_name="simple-one", time="00:05:00", parsable=True)
        jobs["one"] = one.sbatch("sleep 300", verbose=False)
        two = Slurm(job_name="simple-two", nodes=2, ntasks_per_node=1, time="00:05:00", parsable=True)
        # Its tasks ignore SIGTERM: only the SIGKILL that follows can end them.
        jobs["two"] = two.sbatch("srun bash -c 'trap \"\" TERM; sleep 300'", verbose=False)
        assert all(isinstance(j, int) for j in jobs.values()), jobs

    def queue():
        s = Slurm()
        deadline = time.time() + PATIENCE
        while True:
            s.squeue.update_squeue()
            if all(s.squeue.jobs.get(j, {}).get("ST") == "R" for j in jobs.values()):
                break
            assert time.time() < deadline, s.squeue.jobs
            time.sleep(0.3)
        two = s.squeue.get_filtered_jobs("simple-two")
        assert list(two) == [jobs["two"]], two
        row = two[jobs["two"]]
        assert row["NAME"] == "simple-two" and row["NODES"] == "2", row
        assert s.squeue.get_filtered_jobs("simple-one")[jobs["one"]]["NODES"] == "1"

    def signal_then_kill():
        # First a SIGTERM to the steps (the two-node job's srun tasks), then SIGKILL.
        s = Slurm()
        s.scancel.signal_job(jobs["two"])
        time.sleep(1)
        assert sacct_state(jobs["two"]) == "RUNNING", sacct_state(jobs["two"])
        s.scancel.signal_job(jobs["two"])
        assert wait_ended(jobs["two"]).startswith("CANCELLED"), sacct_state(jobs["two"])

    def cancel_all():
        Slurm().scancel.cancel_all()  # scancel --me
        assert wait_ended(jobs["one"]).startswith("CANCELLED"), sacct_state(jobs["one"])
        # Cancelled jobs leave the queue once their processes are gone (COMPLETING, CG,
        # until then, as in Slurm): the queue empties within KillWait.
        s = Slurm()
        deadline = time.monotonic() + 60
        while True:
            s.squeue.update_squeue()
            if s.squeue.jobs == {} or time.monotonic() > deadline:
                break
            assert all(j["ST"] == "CG" for j in s.squeue.jobs.values()), s.squeue.jobs
            time.sleep(0.5)
        assert s.squeue.jobs == {}, s.squeue.jobs

    check("sbatch through Slurm(...).sbatch, --parsable", submit)
    check("squeue --me with a quoted CSV format, parsed by SlurmSqueueWrapper", queue)
    check("scancel --signal=TERM, then --signal=KILL", signal_then_kill)
    check("scancel --me", cancel_all)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
