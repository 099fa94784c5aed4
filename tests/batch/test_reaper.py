"""An embedded Ray ends with its driver (codenib/batch/reaper.py): after the driver is killed,
or ends normally, no process of its Ray session remains, its agents included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

REPO = Path(__file__).resolve().parents[2]
#: A cold embedded Ray on a loaded 2-CPU machine.
START_TIMEOUT_S = 180
#: Generous: the watchdog needs about GRACE_S (3 s); Ray's own agents lingered 40-80 s.
GONE_WITHIN_S = 30
AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")

DRIVER = """
import sys, time
from codenib.batch.raysession import start_ray, stop_ray
start_ray(None, False, lambda m: None)
print("READY", flush=True)
if sys.argv[1] == "clean":
    sys.stdin.readline()
    stop_ray()
    print("STOPPED", flush=True)
else:
    time.sleep(600)
"""


def _session(driver: psutil.Process) -> list[psutil.Process]:
    try:
        return driver.children(recursive=True)
    except psutil.Error:
        return []


def _names(procs: list[psutil.Process]) -> set[str]:
    out = set()
    for p in procs:
        try:
            out.add(p.name() if p.name().startswith("ray::") else " ".join(p.cmdline()[:1]))
            out.add(" ".join(p.cmdline()))
        except psutil.Error:
            continue
    return out


def _alive(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {' '.join(p.cmdline())[:80]}")
        except psutil.Error:
            continue
    return out


@pytest.mark.parametrize("ending", ["killed", "clean"])
def test_no_process_of_the_embedded_ray_outlives_its_driver(ending, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k != "CODENIB_RAY_OWNER"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, ending], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env, text=True, cwd=tmp_path)
    session: list[psutil.Process] = []
    try:
        assert driver.stdout.readline().strip() == "READY"
        handle = psutil.Process(driver.pid)
        deadline = time.monotonic() + START_TIMEOUT_S
        # Wait until the raylet has started both agents: they are what outlived the driver.
        while time.monotonic() < deadline:
            session = _session(handle)
            if all(any(a in n for n in _names(session)) for a in AGENTS):
                break
            time.sleep(0.5)
        assert all(any(a in n for n in _names(session)) for a in AGENTS), _names(session)
        if ending == "killed":
            driver.send_signal(signal.SIGKILL)
            driver.wait(timeout=30)
        else:
            driver.stdin.write("stop\n")
            driver.stdin.flush()
            assert driver.stdout.readline().strip() == "STOPPED"
            driver.stdin.close()
            driver.wait(timeout=60)
        deadline = time.monotonic() + GONE_WITHIN_S
        while _alive(session) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _alive(session), f"outlived the driver: {_alive(session)}"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=30)
        for p in session:   # this test's own processes only, by pid
            try:
                p.kill()
            except psutil.Error:
                pass


def test_reap_stops_marked_processes_and_their_descendants_without_the_marker(tmp_path):
    from codenib.batch.reaper import MARKER_ENV, reap, track

    marker = "test-" + os.urandom(6).hex()
    # A marked parent whose child has an environment of its own (as Ray's agents look once
    # their process title has overwritten the environment that /proc shows).
    env = {**os.environ, MARKER_ENV: marker}
    parent = subprocess.Popen(["sh", "-c", "env -i sleep 300 & wait"], env=env, start_new_session=True)
    try:
        handle = psutil.Process(parent.pid)
        deadline = time.monotonic() + 30
        while not handle.children() and time.monotonic() < deadline:
            time.sleep(0.1)
        child = handle.children()[0]
        known = track(marker, {})
        assert {parent.pid, child.pid} <= set(known)
        assert reap(marker, known, grace_s=5.0) >= 2
        parent.wait(timeout=30)
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    finally:
        for proc in (parent,):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
