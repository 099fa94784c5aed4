"""A watchdog that ends an embedded Ray together with the driver that started it.

`ray.init()` without an address starts a GCS, a raylet, a dashboard and, under the raylet,
agents and workers. When the driver is killed (SIGKILL, OOM killer), the GCS and raylet go
soon, but `ray::DashboardAgent` and `ray::RuntimeEnvAgent` outlive it for a minute or more,
reparented to init. So, before an embedded Ray starts, `start_reaper` starts this module as
a small process of its own session, holding the read end of a pipe whose write end only the
driver holds, and puts a per-driver marker into the environment that the processes `ray.init`
starts inherit. While the driver lives, the watchdog notes every process of this user that
carries the marker and all their descendants (the agents and workers set their process
title, which overwrites the environment /proc shows, so they are known by ancestry). When the
pipe closes (the driver ended, however it ended, or released it after `ray.shutdown()`), it
stops every process it noted: SIGTERM, then SIGKILL after a grace period. It reads /proc
(Linux); elsewhere it does nothing.
"""

from __future__ import annotations

import os
import select
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
#: How often the watchdog notes the session's processes while the driver lives: the agents
#: start within a second or two of the raylet, and a look costs a few milliseconds.
WATCH_S = 0.5
#: How often it looks again while it waits for the processes to exit.
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


def track(marker: str, known: dict[int, int]) -> dict[int, int]:
    """Add to `known` (pid -> start time) this user's processes that carry `marker` and every
    descendant of a known process; returns `known`."""
    table = _processes()
    me = os.getpid()
    for pid in table:
        if pid not in known and pid != me and _has_marker(pid, marker):
            known[pid] = table[pid][1]
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    todo = [pid for pid, start in known.items() if table.get(pid, (0, None))[1] == start]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in known and child != me:
                known[child] = table[child][1]
                todo.append(child)
    return known


def reap(marker: str, known: dict[int, int] | None = None, grace_s: float = GRACE_S) -> int:
    """SIGTERM every process of the session (`known` and what `track` finds now), SIGKILL what
    is left after `grace_s`; returns how many processes were signalled."""
    known = track(marker, dict(known or {}))
    signalled: set[int] = set()
    deadline = time.monotonic() + grace_s
    while True:
        alive = _alive(track(marker, known))
        if not alive:
            return len(signalled)
        final = time.monotonic() >= deadline
        for pid in alive:
            if final or pid not in signalled:
                _signal(pid, signal.SIGKILL if final else signal.SIGTERM)
                signalled.add(pid)
        if final:
            # One more look: a raylet may have started a worker between the look and its death.
            time.sleep(POLL_S)
            for pid in _alive(track(marker, known)):
                _signal(pid, signal.SIGKILL)
            return len(signalled)
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    """`python -m codenib.batch.reaper MARKER`, stdin the read end of the driver's pipe."""
    marker = argv[0]
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # a Ctrl-C meant for the driver
    known: dict[int, int] = {}
    fd = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], WATCH_S)
        if not ready:
            track(marker, known)
            continue
        try:
            if os.read(fd, 4096):
                continue
        except OSError:
            pass
        break   # end of file: the driver is gone, or done with its Ray
    reap(marker, known)
    return 0


def _processes() -> dict[int, tuple[int, int]]:
    """This user's processes: pid -> (parent pid, start time in clock ticks since boot)."""
    uid = os.getuid()
    out: dict[int, tuple[int, int]] = {}
    try:
        entries = [e for e in _PROC.iterdir() if e.name.isdigit()]
    except OSError:   # no /proc: not Linux
        return out
    for entry in entries:
        try:
            if entry.stat().st_uid != uid:
                continue
            stat = (entry / "stat").read_bytes()
        except OSError:   # gone since the listing
            continue
        # The command name (field 2) is in parentheses and may hold spaces: split after it.
        fields = stat[stat.rfind(b")") + 2:].split()
        out[int(entry.name)] = (int(fields[1]), int(fields[19]))
    return out


def _has_marker(pid: int, marker: str) -> bool:
    try:
        environ = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return f"{MARKER_ENV}={marker}".encode() in environ.split(b"\0")


def _alive(known: dict[int, int]) -> list[int]:
    """The pids of `known` still running as the same process (same start time), not zombies."""
    table = _processes()
    out = []
    for pid, start in known.items():
        if table.get(pid, (0, None))[1] == start and not _zombie(pid):
            out.append(pid)
    return out


def _zombie(pid: int) -> bool:
    try:
        stat = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] == b"Z"


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
