#!/usr/bin/env python3
"""A stand-in for `python -m torch.distributed.run ... train.py`: no PyTorch, no GPU,
only what a job's survival depends on.

Run under `srun`, one copy per task, it takes torchrun's arguments (`--nnodes`,
`--nproc-per-node`, `--rdzv-backend`, `--rdzv-endpoint`, `--max-restarts`) and then the
training script's own (`--steps`, `--step-seconds`, `--checkpoint-dir`, anything else
is ignored, as `train.py --config ...` would be read by the real script).

- As torchrun's elastic agent, each copy is a *launcher*: it starts its worker (this
  file again, with `--worker`) and, when the worker dies, starts it again, at most
  `--max-restarts` times (default 0: the launcher fails as its worker did).
- The worker is rank `SLURM_PROCID` of `SLURM_NTASKS`. The workers step in lockstep, as
  a collective (an all-reduce of gradients) makes them: after each step a worker records
  it beside the checkpoints and waits until every rank of its run has done that step.
  A rank that is gone (its node died) leaves the others waiting, as NCCL would. At its start it reads the newest
  checkpoint in `--checkpoint-dir` (on shared storage: every node of every run sees
  it) and resumes from the step after it, printing `start step S restart R` with
  `R = SLURM_RESTART_COUNT` (0 on a job's first run). Each step takes
  `--step-seconds`; after each, rank 0 saves the step number as the checkpoint
  (written to a temporary file and renamed: a reader never sees half of one).
- `--die-once-at=RANK:STEP`: that rank's worker kills itself (SIGKILL) when it reaches
  that step, once per job (a marker beside the checkpoints remembers it): the failure
  of one process that an in-job restart (`--max-restarts`) repairs.
"""

import os
import signal
import socket
import subprocess
import sys
import time


def option(name, default=None):
    """The value of `--name=VALUE` or `--name VALUE` among the arguments."""
    args = sys.argv[1:]
    for i, a in enumerate(args):
        if a.startswith("--" + name + "="):
            return a.split("=", 1)[1]
        if a == "--" + name and i + 1 < len(args):
            return args[i + 1]
    return default


def say(text):
    print(text, flush=True)


def newest_checkpoint(directory):
    """The step of the newest checkpoint, or None."""
    try:
        with open(os.path.join(directory, "checkpoint")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def save_checkpoint(directory, step):
    tmp = os.path.join(directory, ".checkpoint.%d" % os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % step)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(directory, "checkpoint"))


def record_step(directory, restart, rank, step):
    path = os.path.join(directory, "progress.%d.%d" % (restart, rank))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % step)
    os.rename(tmp, path)


def all_done(directory, restart, world, step):
    """True once every rank of run `restart` has done `step`."""
    for rank in range(world):
        try:
            with open(os.path.join(directory, "progress.%d.%d" % (restart, rank))) as f:
                if int(f.read().strip()) < step:
                    return False
        except (OSError, ValueError):
            return False
    return True


def worker():
    rank = int(os.environ.get("SLURM_PROCID", "0"))
    world = int(os.environ.get("SLURM_NTASKS", "1"))
    restart = int(os.environ.get("SLURM_RESTART_COUNT", "0"))
    steps = int(option("steps", "20"))
    step_seconds = float(option("step-seconds", "0.5"))
    directory = option("checkpoint-dir", "checkpoints")
    os.makedirs(directory, exist_ok=True)
    host = socket.gethostname()
    last = newest_checkpoint(directory)
    first = 0 if last is None else last + 1
    say("rank %d on %s: start step %d restart %d" % (rank, host, first, restart))
    die = option("die-once-at")
    die_rank, die_step = (int(x) for x in die.split(":")) if die else (None, None)
    for step in range(first, steps):
        time.sleep(step_seconds)
        if rank == die_rank and step == die_step:
            marker = os.path.join(directory, "died-once.%d" % rank)
            if not os.path.exists(marker):
                open(marker, "w").close()
                say("rank %d on %s: dying at step %d" % (rank, host, step))
                os.kill(os.getpid(), signal.SIGKILL)
        record_step(directory, restart, rank, step)
        while not all_done(directory, restart, world, step):
            time.sleep(0.05)
        if rank == 0:
            save_checkpoint(directory, step)
        say("rank %d on %s: step %d restart %d" % (rank, host, step, restart))
    say("rank %d on %s: done" % (rank, host))


def launcher():
    max_restarts = int(option("max-restarts", "0"))
    rank = int(os.environ.get("SLURM_PROCID", "0"))
    argv = [sys.executable, os.path.abspath(__file__), "--worker"] + sys.argv[1:]
    restarts = 0
    while True:
        code = subprocess.call(argv)
        if code == 0:
            return 0
        if restarts >= max_restarts:
            say("launcher of rank %d: worker failed (%d), no restarts left" % (rank, code))
            return 1
        restarts += 1
        say("launcher of rank %d: worker failed (%d), restart %d of %d"
            % (rank, code, restarts, max_restarts))


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        worker()
    else:
        sys.exit(launcher())
