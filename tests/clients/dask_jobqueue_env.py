"""pytest plugin standing in for dask-jobqueue's repository conftest.py (the wheel ships
its tests but not that file): the `-E NAME` option and `env(NAME)` marker that select
the tests needing a real batch system, and distributed's `loop` fixture.

Used by run.sh: `pytest -p dask_jobqueue_env -E slurm --pyargs dask_jobqueue.tests.test_slurm`.
"""

import pytest

# Before distributed.utils_test, whose fixtures reset dask's configuration to what it
# was when it was imported: dask-jobqueue's defaults must be in it.
import dask_jobqueue  # noqa: F401
from distributed.utils_test import cleanup, loop, loop_in_thread  # noqa: F401 - fixtures


def pytest_addoption(parser):
    parser.addoption("-E", action="append", metavar="NAME",
                     help="only run tests matching the environment NAME.")


def pytest_configure(config):
    config.addinivalue_line("markers", "env(NAME): only run test if environment NAME matches")


def pytest_runtest_setup(item):
    envnames = [mark.args[0] for mark in item.iter_markers(name="env")]
    wanted = item.config.getoption("-E") or []
    if envnames and not set(envnames) & set(wanted):
        pytest.skip(f"test requires env in {envnames!r}")
