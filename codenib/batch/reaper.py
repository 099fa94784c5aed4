"""A watchdog that ends an embedded Ray together with the driver that started it.

`ray.init()` without an address starts a GCS, a raylet, a dashboard and, under the raylet,
agents and workers. When the driver is killed (SIGKILL, OOM killer), the GCS and raylet go
soon, but `ray::DashboardAgent` and `ray::RuntimeEnvAgent` outlive it for a minute or more,
reparented to init. So, before an embedded Ray starts, `start_reaper` starts this module as
a small process of its own session, holding the read end of a pipe whose write end only the
driver holds, and puts a per-driver marker into the environment that every Ray process of
that session inherits. When the pipe closes (the driver ended, however it ended, or released
it after `ray.shutdown()`), the watchdog stops every process of this user that carries the
marker: SIGTERM, then SIGKILL after a grace period. It finds them through /proc (Linux);
elsewhere it does nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

#: The variable that marks the processes of one embedded Ray session (its value is per driver).
MARKER_ENV = "CODENIB_RAY_OWNER"
#: How long the processes get to exit after SIGTERM before SIGKILL (the raylet drains for
#: a few seconds when asked nicely; a dead driver's session has nothing worth draining).
GRACE_S = 3.0
#: How often the watchdog looks again while it waits for the processes to exit.
POLL_S = 0.1
_PROC = Path("/proc")


@dataclass
class Reaper:
    """The driver's end of a watchdog: `release` it after `ray.shutdown()`."""

    marker: str
    process: subprocess.Popen = field(repr=False)
    _fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        """Close the driver's end: the watchdog stops what is left of the session and exits."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def start_reaper() -> Reaper:
    """Start the watchdog and mark the environment, so that Ray processes started from now
    on carry the marker. Call `unmark()` once `ray.init` has returned."""
    marker = uuid.uuid4().hex
    read_end, write_end = os.pipe()  # not inherited by exec'd children (PEP 446): only this driver holds it
    env = {k: v for k, v in os.environ.items() if k != MARKER_ENV}
    # The watchdog imports this package from where the driver has it, however it got there.
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        process = subprocess.Popen([sys.executable, "-m", "codenib.batch.reaper", marker], stdin=read_end,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                   start_new_session=True, close_fds=True)
    finally:
        os.close(read_end)
    os.environ[MARKER_ENV] = marker
    return Reaper(marker, process, write_end)


def unmark() -> None:
    """Take the marker out of this driver's environment: Ray's processes have it, and a later
    child of the driver (not Ray's) must not be taken for one of them."""
    os.environ.pop(MARKER_ENV, None)


def session_pids(marker: str) -> list[int]:
    """Processes of this user whose environment carries `marker` (not this process)."""
    needle = f"{MARKER_ENV}={marker}".encode()
    uid, me = os.getuid(), os.getpid()
    found = []
    try:
        entries = list(_PROC.iterdir())
    except OSError:   # no /proc: not Linux
        return []
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            environ = (entry / "environ").read_bytes()
        except OSError:   # gone, or not ours to read
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def reap(marker: str, grace_s: float = GRACE_S) -> int:
    """SIGTERM every process of the session, SIGKILL what is left after `grace_s`; returns how
    many processes were signalled."""
    signalled: set[int] = set()
    deadline = time.monotonic() + grace_s
    while True:
        pids = session_pids(marker)
        if not pids:
            return len(signalled)
        final = time.monotonic() >= deadline
        for pid in pids:
            if final or pid not in signalled:
                _signal(pid, signal.SIGKILL if final else signal.SIGTERM)
                signalled.add(pid)
        if final:
            # One more look: a raylet may have started a worker between the scan and its death.
            time.sleep(POLL_S)
            for pid in session_pids(marker):
                _signal(pid, signal.SIGKILL)
            return len(signalled)
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    """`python -m codenib.batch.reaper MARKER`, stdin the read end of the driver's pipe."""
    marker = argv[0]
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # a Ctrl-C meant for the driver
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    reap(marker)
    return 0


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
