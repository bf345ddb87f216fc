"""What the client drivers share: named checks, each run once, counted and reported.

Each check prints `ok   NAME (T s)` or `FAIL NAME (T s)` with the traceback; `summary()`
prints the driver's last line, `N passed, M failed`, and gives its exit status.
"""

import sys
import time
import traceback

_counts = {"passed": 0, "failed": 0}


def check(name, fn=None):
    """Runs `fn` now as the check `name` and counts it; without `fn`, a decorator that
    does the same with the function it decorates (and returns it)."""
    if fn is None:
        def decorate(f):
            check(name, f)
            return f

        return decorate
    start = time.time()
    try:
        fn()
    except Exception:  # noqa: BLE001 - a check's failure is reported, not raised
        _counts["failed"] += 1
        print(f"FAIL {name} ({time.time() - start:.1f} s)")
        traceback.print_exc(file=sys.stdout)
    else:
        _counts["passed"] += 1
        print(f"ok   {name} ({time.time() - start:.1f} s)")
    sys.stdout.flush()
    return fn


def summary():
    """Prints `N passed, M failed` and returns the exit status: 1 if anything failed."""
    print(f"{_counts['passed']} passed, {_counts['failed']} failed")
    return 1 if _counts["failed"] else 0
