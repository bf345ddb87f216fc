"""Snakemake with its Slurm executor plugin, unmodified, against a running Sluice
cluster: the workflow in snakemake/Snakefile, run by the `snakemake` command.

Each check prints `ok` or `FAIL`; the last line is `N passed, M failed`, and the exit
status is non-zero when anything failed.
"""

import shutil
import subprocess
import sys
from pathlib import Path

from checks import check, summary

HERE = Path(__file__).resolve().parent
WORK = Path("workflow").absolute()
# The rule that times out runs alongside the others, from a directory of its own.
SLOW = Path("workflow-slow").absolute()
def start_snakemake(work, *args):
    """Starts snakemake on the Slurm executor in `work`, its output to a log there."""
    cmd = [
        "snakemake", "--executor", "slurm", "--jobs", "10",
        "--slurm-init-seconds-before-status-checks", "1", "--nocolor", *args,
    ]
    log = work / f"snakemake-{'-'.join(args)}.log"
    with open(log, "w") as out:
        return subprocess.Popen(cmd, cwd=work, stdout=out, stderr=subprocess.STDOUT), log


def finish(started):
    """The exit status and output of a snakemake started by start_snakemake."""
    proc, log = started
    try:
        code = proc.wait(timeout=400)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    return code, log.read_text()


def snakemake(*args):
    return finish(start_snakemake(WORK, *args))


def sacct(*args):
    o = subprocess.run(
        ["sacct", "-a", "-P", "-n", "-X", *args], check=True, capture_output=True, text=True
    )
    return [line.split("|") for line in o.stdout.splitlines() if line]


def last_job():
    """The highest job id so far (0 for none)."""
    return max((int(r[0]) for r in sacct("-o", "JobIDRaw")), default=0)


FIRST = 0  # jobs before this id are not this driver's


def jobs_of(rule):
    """(JobID, State, ExitCode, AllocCPUS, ReqMem, Timelimit) of the jobs the plugin
    submitted for `rule` (it names the rule in --comment)."""
    rows = sacct("-o", "JobID,State,ExitCode,AllocCPUS,ReqMem,Timelimit,Comment,JobIDRaw")
    return [
        r[:6]
        for r in rows
        if (r[6] == f"rule_{rule}" or r[6].startswith(f"rule_{rule}_")) and int(r[7]) >= FIRST
    ]


def main():
    global FIRST
    FIRST = last_job() + 1
    for work in (WORK, SLOW):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        shutil.copy(HERE / "snakemake" / "Snakefile", work / "Snakefile")
    slow = start_snakemake(SLOW, "slow")

    def workflow():
        code, log = snakemake("--slurm-array-jobs=square", "all")
        assert code == 0, log[-4000:]
        assert (WORK / "sum.txt").read_text() == "14\n", (WORK / "sum.txt").read_text()
        # The array: one job, a task per item, each told its place.
        squares = [(WORK / "squares" / f"{i}.txt").read_text().split() for i in range(4)]
        assert [s[0] for s in squares] == ["0", "1", "4", "9"], squares
        assert len({s[1] for s in squares}) == 1, squares
        assert sorted(s[2] for s in squares) == ["1", "2", "3", "4"], squares
        rows = jobs_of("square")
        assert sorted(r[0] for r in rows) == [f"{squares[0][1]}_{t}" for t in range(1, 5)], rows
        assert all(r[1] == "COMPLETED" for r in rows), rows
        # Threads, memory and runtime as the rule asked.
        job, cpus_per_task, cpus_on_node = (WORK / "wide.txt").read_text().split()
        assert (cpus_per_task, cpus_on_node) == ("2", "2"), (cpus_per_task, cpus_on_node)
        assert jobs_of("wide") == [[job, "COMPLETED", "0:0", "2", "800M", "00:07:00"]], jobs_of("wide")
        assert [r[1] for r in jobs_of("sum")] == ["COMPLETED"], jobs_of("sum")

    def failing_rule():
        code, log = snakemake("after_fails")
        assert code != 0, log[-4000:]
        assert "Error in rule fails:" in log, log[-4000:]
        assert "SLURM status is: 'FAILED'" in log, log[-4000:]
        assert "Reason: Unknown" in log, log[-4000:]  # no step of it has a reason
        rows = jobs_of("fails")
        assert [(r[1], r[2]) for r in rows] == [("FAILED", "1:0")], rows
        # The workflow stopped: what needed the failed rule's output never ran.
        assert jobs_of("after_fails") == [], jobs_of("after_fails")
        assert not (WORK / "after.txt").exists()

    def timeout_rule():
        code, log = finish(slow)
        assert code != 0, log[-4000:]
        assert "Error in rule slow:" in log, log[-4000:]
        assert "SLURM status is: 'TIMEOUT'" in log, log[-4000:]
        rows = jobs_of("slow")
        assert [(r[1], r[5]) for r in rows] == [("TIMEOUT", "00:01:00")], rows
        assert not (SLOW / "slow.txt").exists()

    check("workflow: resources, an array job, results", workflow)
    check("a failing rule: reported FAILED, the workflow stops", failing_rule)
    check("a rule past its runtime: reported TIMEOUT", timeout_rule)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
