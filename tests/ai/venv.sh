#!/usr/bin/env bash
# The real AI-lab software the hosts tests run (Ray, Dask's distributed, jupyter-server,
# JupyterHub's batchspawner), pinned in requirements.txt, in a virtual environment of its
# own: reused when it already holds exactly the pinned versions. Prints the environment's
# python, which the tests take from SLUICE_AI_PYTHON (the hosts share this machine's /tmp).
#
#   tests/ai/venv.sh [DIR]     (default DIR: /tmp/sluice-ai-venv)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-/tmp/sluice-ai-venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || { rm -rf "$venv"; python3 -m venv --without-pip "$venv"; }
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"$venv/bin/python" -m pip --version >/dev/null 2>&1 \
    || pip=(python3 -m pip --disable-pip-version-check --python "$venv/bin/python")
if ! "${pip[@]}" freeze 2>/dev/null | sort | diff -q - <(grep -v '^#' "$here/requirements.txt" | sort) >/dev/null; then
    "${pip[@]}" install --quiet -r "$here/requirements.txt" >&2
fi
echo "$venv/bin/python"
