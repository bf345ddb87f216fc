"""PSI/J's Slurm executor (psij-python), unmodified, against a running Sluice cluster.

PSI/J submits with sbatch and follows its jobs with `squeue -O
JobArrayID,StateCompact,Reason -t all --me`; a job that squeue shows failed (`F`, `TO`,
`NF`, `OOM`, ...) must carry a reason PSI/J knows (`NonZeroExitCode`, `TimeLimit`,
`NodeDown`, ...): with `None` its poller fails an assertion on every poll and never sees
the job end. Its script template records the command's exit code itself, so a command
that exits non-zero leaves a batch job that COMPLETED; only a job ended by Slurm
(a time limit) reaches PSI/J through squeue's reason.

Each check prints `ok` or `FAIL`; the last line is `N passed, M failed`, and the exit
status is non-zero when anything failed.
"""

import sys
from datetime import timedelta

from psij import Job, JobAttributes, JobExecutor, JobSpec, JobState

from checks import check, summary

PATIENCE = timedelta(seconds=150)


def main():
    ex = JobExecutor.get_instance("slurm")

    def job(command, **attributes):
        j = Job(JobSpec(executable="/bin/bash", arguments=["-c", command],
                        attributes=JobAttributes(**attributes)))
        ex.submit(j)
        return j

    # All at once: the timed-out one takes longest.
    ok = job("true")
    bad = job("exit 3")
    slow = job("sleep 300", duration=timedelta(seconds=30))
    gone = job("sleep 300")

    def ended(j):
        s = j.wait(timeout=PATIENCE)
        assert s is not None, f"job {j.native_id} still {j.status} after {PATIENCE}"
        return s

    @check("a job that exits 0 completes")
    def _():
        s = ended(ok)
        assert s.state == JobState.COMPLETED and s.exit_code == 0, s

    @check("a job that exits 3 fails with exit code 3")
    def _():
        s = ended(bad)
        assert s.state == JobState.FAILED and s.exit_code == 3, s

    @check("a cancelled job is canceled")
    def _():
        gone.wait(timeout=PATIENCE, target_states=[JobState.ACTIVE])
        gone.cancel()
        s = ended(gone)
        assert s.state == JobState.CANCELED, s

    @check("a job past its time limit fails, for squeue's reason TimeLimit")
    def _():
        s = ended(slow)
        assert s.state == JobState.FAILED, s
        assert s.message == "The job exhausted its time limit.", s


if __name__ == "__main__":
    main()
    sys.exit(summary())
