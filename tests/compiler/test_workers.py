"""`codenib.compiler.workers`: the pool's processes die with the process that started them,
and whatever a worker raises reaches the caller as a CodeNib error. Real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from codenib.compiler.workers import WorkerError, Workers
from codenib.core.errors import BadInputError

#: Generous bounds: the machine is shared, and a start may be slow.
START_SECONDS = 60
GONE_SECONDS = 20

_HOLDER = textwrap.dedent("""
    import os, sys, time
    from codenib.compiler import workers as pool
    from codenib.compiler.workers import Workers

    if os.environ.get("HOLDER_NO_PDEATHSIG"):     # as where prctl is missing: the watch thread
        pool._set_parent_death_signal = lambda: False

    workers = Workers(2)
    workers.map(time.sleep, [0.0, 0.0], "start", "chunk", False)   # both workers exist now
    print("ready", flush=True)
    time.sleep(600)
""")


def _alive(pids: list[int]) -> list[int]:
    """The pids that still run (a zombie has ended; PID 1 here may not reap it)."""
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.mark.parametrize("sig, pdeathsig", [(signal.SIGKILL, True), (signal.SIGTERM, True),
                                            (signal.SIGKILL, False)])
def test_workers_die_with_their_parent(tmp_path, sig, pdeathsig):
    """A parent killed with `kill -9` (or ended by SIGTERM) takes its workers with it; they
    stayed alive indefinitely before. Without PR_SET_PDEATHSIG, the watch thread ends them."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "HOLDER_NO_PDEATHSIG": "" if pdeathsig else "1"}
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER], stdout=subprocess.PIPE, env=env, text=True)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + START_SECONDS
        assert proc.stdout.readline().strip() == "ready"
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = [c.pid for c in psutil.Process(proc.pid).children()
                       if "python" in c.name().lower() or c.cmdline()[:1] == [sys.executable]]
            time.sleep(0.1)
        assert len(workers) >= 2, f"the holder's workers did not start: {workers}"
        os.kill(proc.pid, sig)
        proc.wait(timeout=START_SECONDS)
        deadline = time.monotonic() + GONE_SECONDS
        while _alive(workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _alive(workers)
        assert not left, f"workers {left} outlived their parent (killed by {sig.name})"
    finally:
        for pid in [proc.pid, *workers]:      # only the processes this test started
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=START_SECONDS)


class _Unpicklable(Exception):
    """An exception that cannot be pickled (as pygit2's errors from a worker could not)."""

    def __init__(self, message: str, handle):
        super().__init__(message)
        self.handle = handle

    def __reduce__(self):
        raise TypeError("cannot pickle this error")


def _fail(chunk):
    if chunk == "typed":
        raise BadInputError("chunk is bad", path="x.py", fix="pass a good chunk")
    raise _Unpicklable(f"no object {chunk}", handle=object())


def test_a_worker_exception_reaches_the_caller_as_a_codenib_error():
    """An exception that does not pickle comes back as a WorkerError naming it (the pool
    raised a PicklingError before); a typed error keeps its class and text."""
    with Workers(2) as workers:
        with pytest.raises(WorkerError, match=r"_Unpicklable: no object 7(.|\n)*_fail"):
            workers.map(_fail, [7, 8], "test", "chunk", False)
        with pytest.raises(WorkerError, match="no object (9|10)"):   # the first to finish
            workers.map_runs(_fail, [9, 10], "test", "chunk", False)
        with pytest.raises(BadInputError, match="chunk is bad.*fix: pass a good chunk"):
            workers.map(_fail, ["typed"], "test", "chunk", False)
