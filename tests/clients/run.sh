#!/usr/bin/env bash
# The client suite: real workflow tools from PyPI, unmodified, against a running Sluice
# cluster (`sluice up`, three nodes of four CPUs): drivers for submitit, dask-jobqueue,
# simple-slurm, Snakemake's Slurm executor and PSI/J's (each prints `N passed, M failed` and
# exits non-zero on failure), and the Slurm tests of dask-jobqueue and simple-slurm
# themselves. This script fails if any of them does, or if the cluster does not stop.
#
# Environment:
#   SLUICE_BIN          the sluice binary (default: target/release/sluice)
#   SLUICE_CLIENTS_VENV where the virtual environment goes (default: /tmp/sluice-clients-venv;
#                       reused when it already has the pinned versions)
#   SLUICE_CLIENTS_ONLY run only these (space separated: submitit dask dask-tests
#                       simple-slurm simple-slurm-tests snakemake psij)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

bin="${SLUICE_BIN:-target/release/sluice}"
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
[ -x "$bin" ] || { echo "run.sh: no sluice binary at $bin (cargo build --release -p sluice-cli)" >&2; exit 1; }
venv="${SLUICE_CLIENTS_VENV:-/tmp/sluice-clients-venv}"
only="${SLUICE_CLIENTS_ONLY:-submitit dask dask-tests simple-slurm simple-slurm-tests snakemake psij}"

# The pinned clients (and what they pull in that matters to them). PSI/J asks for
# psutil<=7.0.0, which the pinned psutil (dask's) contradicts for pip's resolver only:
# it is installed on its own, without its dependencies (pystache and typeguard are in
# requirements.txt).
requirements="$here/requirements.txt"
requirements_nodeps="$here/requirements-nodeps.txt"

echo "== virtual environment in $venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv"; then
        # No ensurepip (Debian without python3-venv): an empty environment, filled by
        # the system's pip.
        rm -rf "$venv"
        python3 -m venv --without-pip "$venv"
    fi
fi
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    pip=(python3 -m pip --disable-pip-version-check --python "$venv/bin/python")
fi
if ! "${pip[@]}" freeze 2>/dev/null | sort | diff -q - <(cat "$requirements" "$requirements_nodeps" | grep -v '^#' | sort) >/dev/null; then
    "${pip[@]}" install --quiet -r "$requirements"
    "${pip[@]}" install --quiet --no-deps -r "$requirements_nodeps"
fi
"${pip[@]}" freeze | grep -Ei '^(submitit|dask|dask-jobqueue|distributed|pytest|simple.slurm|snakemake|snakemake-executor-plugin-slurm.*|psij-python)=='
# simple-slurm's unittest suite is in its source distribution, not in its wheel.
simple_slurm="$(grep -i '^simple.slurm==' "$requirements" | cut -d= -f3)"
simple_slurm_src="$venv/src/simple_slurm-$simple_slurm"
if [ ! -d "$simple_slurm_src/test" ]; then
    mkdir -p "$venv/src"
    "${pip[@]}" download --quiet --no-deps --no-binary :all: -d "$venv/src" "simple_slurm==$simple_slurm"
    tar -xzf "$venv/src/simple_slurm-$simple_slurm.tar.gz" -C "$venv/src"
fi

# A fresh cluster: three nodes of four CPUs in one partition.
work="$(mktemp -d /tmp/sluice-clients.XXXXXX)"
state="$work/state"
cat > "$work/slurm.conf" <<CONF
ClusterName=clients
SlurmctldHost=localhost
NodeName=c[1-3] CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=c[1-3] Default=YES MaxTime=1:00:00 State=UP
CONF

up_pid=""
stop() {
    status=$?
    if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then
        kill -INT "$up_pid" 2>/dev/null || true
        for _ in $(seq 1 60); do kill -0 "$up_pid" 2>/dev/null || break; sleep 0.5; done
        if kill -0 "$up_pid" 2>/dev/null; then
            echo "run.sh: sluice up did not stop on SIGINT within 30 s; killing it and its agents" >&2
            status=1
            agents="$(pgrep -P "$up_pid" || true)"
            kill -KILL "$up_pid" $agents 2>/dev/null || true
        fi
        wait "$up_pid" 2>/dev/null || true
    fi
    if [ "$status" -ne 0 ]; then
        echo "== sluice up log (last 50 lines)"
        tail -n 50 "$work/up.log" 2>/dev/null || true
        echo "(cluster files kept in $work)"
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap stop EXIT
trap 'exit 130' INT TERM

echo "== sluice up (3 nodes x 4 CPUs) in $work"
"$bin" up --config "$work/slurm.conf" --state-dir "$state" > "$work/up.log" 2>&1 &
up_pid=$!
export SLUICE_STATE_DIR="$state"
export PATH="$state/bin:$venv/bin:$PATH"
unset SLURM_CONF SLURM_JOB_ID SLURM_JOBID
ready=""
for _ in $(seq 1 240); do
    if [ -x "$state/bin/sinfo" ]; then
        nodes="$(sinfo -h -N -o %t 2>/dev/null || true)"
        if [ "$(printf '%s\n' "$nodes" | grep -cx idle)" = 3 ]; then ready=1; break; fi
    fi
    kill -0 "$up_pid" 2>/dev/null || { echo "run.sh: sluice up exited" >&2; exit 1; }
    sleep 0.5
done
[ -n "$ready" ] || { echo "run.sh: nodes not idle after 120 s" >&2; sinfo -N >&2 || true; exit 1; }
sinfo

# One client's run, from its own directory under the cluster's.
client_run() {
    case "$1" in
        submitit | dask | snakemake | psij) python -u "$here/$1_driver.py" ;;
        simple-slurm) python -u "$here/simple_slurm_driver.py" ;;
        # Its own suite, unmodified, run from a copy (test 19 writes script.sh in the
        # working directory).
        simple-slurm-tests)
            cp -r "$simple_slurm_src/test" . && python -m unittest discover -s test -t . -v ;;
        # dask-jobqueue's own tests marked for Slurm (`-E slurm`), but two that need
        # its CI's docker set-up: network aliases `eth0:scheduler`/`eth0:worker` and a
        # /shared_space volume (dask_driver.py runs SLURMRunner under srun instead).
        dask-tests)
            PYTHONPATH="$here" PYTHONDONTWRITEBYTECODE=1 python -m pytest -p dask_jobqueue_env -E slurm -p no:cacheprovider \
                --pyargs dask_jobqueue.tests.test_slurm -v \
                -k 'not test_different_interfaces_on_scheduler_and_workers and not test_slurm_runner' ;;
        *) echo "run.sh: unknown client $1" >&2; return 1 ;;
    esac
}

failed=""
for client in $only; do
    echo "== $client"
    mkdir -p "$work/$client"
    start=$SECONDS
    if (cd "$work/$client" && client_run "$client"); then
        echo "== $client: ok ($((SECONDS - start)) s)"
    else
        echo "== $client: FAILED ($((SECONDS - start)) s)"
        failed="$failed $client"
    fi
done

if [ -n "$failed" ]; then
    echo "run.sh: failed:$failed" >&2
    exit 1
fi
echo "== all clients passed"
